"""niceeval: test LLM apps and AI agents with named, scored assertions folded into one outcome per eval."""

from niceeval._core.assertion import AssertionResult
from niceeval._core.errors import ConfigError, NiceevalError, UsageError
from niceeval._core.outcome import Outcome
from niceeval._core.results import RunResult
from niceeval._eval.config import Config, JudgeSettings, Price, define_config
from niceeval._eval.context import Check, EvalContext, SyncEvalContext
from niceeval._eval.conversation import Turn
from niceeval._eval.spec import EvalSpec, define_eval

__all__ = [
    "AssertionResult",
    "Check",
    "Config",
    "ConfigError",
    "EvalContext",
    "EvalSpec",
    "JudgeSettings",
    "NiceevalError",
    "Outcome",
    "Price",
    "RunResult",
    "SyncEvalContext",
    "Turn",
    "UsageError",
    "define_config",
    "define_eval",
]
