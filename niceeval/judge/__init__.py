"""LLM-as-judge: `t.judge` assertions over the OpenAI and Anthropic SDKs, with fallback, cache and cost.

Eval authors reach it as `t.judge` (a `Judge`; `t.judge.autoevals` is an `Autoevals`), and each judge assertion
returns a `JudgeHandle` to chain (`.at_least(0.8)`, `.gate()`). Every result keeps its model calls as `JudgeCall`
records; `judge_spend(results)` sums them into a `JudgeSpend`. See docs/judge.md.

Every judge method builds a `JudgeRequest` and asks it with `Judge.ask`, the one way to ask; what a judge is sent
is capped at `max_chars` characters (docs/judge.md, "What a judge is sent").

How the runner wires a run's judge (clients, cache, one session per run) is private: `niceeval run`, the pytest
plugin and `niceeval rescore` do it through one module, `niceeval.judge._runtime`, the only one other packages
import besides this one.

Design: docs/design/judge.md
"""

from niceeval._core.assertion import JudgeCall
from niceeval.judge._autoevals import Autoevals
from niceeval.judge._handle import JudgeHandle
from niceeval.judge._judge import Judge
from niceeval.judge._spend import JudgeSpend, judge_spend

__all__ = [
    "Autoevals",
    "Judge",
    "JudgeCall",
    "JudgeHandle",
    "JudgeSpend",
    "judge_spend",
]
