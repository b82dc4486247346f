"""Online evals: the suite's checks scored on live production traces (`niceeval watch`).

An online eval (`@define_eval(online=True, sample=0.1, where=...)`) takes a finished trace instead of driving an
agent: `t.input`, `t.reply`, `t.trace`, `t.tool_calls`, the matchers, scoped, span and judge assertions. The
watcher receives OTLP/HTTP, assembles traces by trace id, runs the matching online evals with bounded queues and
concurrency, stores each result (a suite run of kind `online` per watch session and day), exports the standard
`gen_ai.evaluation.result` events, and raises anytime-valid alarms. `write_regression` turns a stored trace into
a regression eval that replays the live agent (its tools answered from the trace) or the recorded trace.

Design: docs/design/online.md
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from niceeval._core.lazy import lazy_getattr

if TYPE_CHECKING:
    from niceeval.online._regression import RegressionRequest, WrittenRegression, write_regression

__all__ = ["RegressionRequest", "WrittenRegression", "write_regression"]

__getattr__ = lazy_getattr(
    __name__,
    {name: "niceeval.online._regression" for name in ("RegressionRequest", "WrittenRegression", "write_regression")},
)
"""A stored trace written as a regression eval (`niceeval cases from-trace`, the viewer's button), loaded on use."""
