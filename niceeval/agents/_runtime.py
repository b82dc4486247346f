"""The agents package's one door for the runner (`niceeval._eval`, `niceeval._run`): what running an agent under
test needs beyond the public names of `niceeval.agents`.

- `load_attachments`: the files of `t.send(text, files=[...])`, read and checked at that line.
- `WORKSPACE`: the sandbox folder of the running eval, set by the runner around each run (`current_workspace()`
  reads it).
- `EXPERIMENT_MODEL`: the running experiment's model, set by the runner around each run of `niceeval exp`; model
  agents call it instead of their own.
- `PerVariant`: what `per_variant(factory)` returns; the runner builds the agent of each variant from it.
- `ReplayAgent`, `RecordedTurn`: `niceeval rescore`'s agent, replaying recorded turns (loaded on first use:
  only a rescore needs them).
- `TraceAgent`: the agent of a run that scores a production trace (an online eval, an eval with `trace=`).
- `replaying_agent`, `check_replays_tools`: the agent under test with its tools answered from a saved trace
  (`define_eval(trace=..., replay="live")`), and the check that it can be.

None of these is an eval author's business, so they are not public; no other private module of the package is
imported from outside it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from niceeval._core.lazy import lazy_getattr
from niceeval.agents._attachments import load_attachments
from niceeval.agents._protocol import EXPERIMENT_MODEL, WORKSPACE
from niceeval.agents._variant import PerVariant

if TYPE_CHECKING:
    from niceeval.agents._replay import RecordedTurn, ReplayAgent
    from niceeval.agents._tool_replay import check_replays_tools, replaying_agent
    from niceeval.agents._trace_agent import TraceAgent

__all__ = [
    "EXPERIMENT_MODEL",
    "WORKSPACE",
    "PerVariant",
    "RecordedTurn",
    "ReplayAgent",
    "TraceAgent",
    "check_replays_tools",
    "load_attachments",
    "replaying_agent",
]

__getattr__ = lazy_getattr(
    __name__,
    {
        "RecordedTurn": "niceeval.agents._replay",
        "ReplayAgent": "niceeval.agents._replay",
        "TraceAgent": "niceeval.agents._trace_agent",
        "check_replays_tools": "niceeval.agents._tool_replay",
        "replaying_agent": "niceeval.agents._tool_replay",
    },
)
