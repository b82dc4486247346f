"""niceeval: test LLM apps and AI agents with named, scored assertions folded into one outcome per eval.

Names load on first use, so the `niceeval` command (which lives in this package) starts without importing
pydantic and the rest until a command needs them.

Design: docs/design/README.md
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from niceeval._core.lazy import lazy_getattr

if TYPE_CHECKING:
    from niceeval._core.assertion import AssertionResult
    from niceeval._core.errors import ConfigError, NiceevalError, UsageError
    from niceeval._core.outcome import Outcome
    from niceeval._core.results import RunResult
    from niceeval._core.settings import JudgeSettings, Price
    from niceeval._eval.checks import Check
    from niceeval._eval.config import Config, define_config
    from niceeval._eval.context import EvalContext, SyncEvalContext
    from niceeval._eval.conversation import Session, Turn
    from niceeval._eval.experiment import EvalRef, Experiment, define_experiment
    from niceeval._eval.observe import ToolCall
    from niceeval._eval.spec import EvalSpec, define_eval

_HOMES = {
    "AssertionResult": "niceeval._core.assertion",
    "ConfigError": "niceeval._core.errors",
    "NiceevalError": "niceeval._core.errors",
    "UsageError": "niceeval._core.errors",
    "Outcome": "niceeval._core.outcome",
    "RunResult": "niceeval._core.results",
    "Config": "niceeval._eval.config",
    "JudgeSettings": "niceeval._core.settings",
    "Price": "niceeval._core.settings",
    "define_config": "niceeval._eval.config",
    "Check": "niceeval._eval.checks",
    "EvalContext": "niceeval._eval.context",
    "SyncEvalContext": "niceeval._eval.context",
    "Turn": "niceeval._eval.conversation",
    "Session": "niceeval._eval.conversation",
    "ToolCall": "niceeval._eval.observe",
    "EvalSpec": "niceeval._eval.spec",
    "EvalRef": "niceeval._eval.experiment",
    "Experiment": "niceeval._eval.experiment",
    "define_experiment": "niceeval._eval.experiment",
    "define_eval": "niceeval._eval.spec",
}

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
    "Session",
    "SyncEvalContext",
    "ToolCall",
    "Turn",
    "UsageError",
    "define_config",
    "define_eval",
    "EvalRef",
    "Experiment",
    "define_experiment",
]

__getattr__ = lazy_getattr(__name__, _HOMES)
