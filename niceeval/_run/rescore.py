"""`niceeval rescore RUN`: the eval functions run again over a stored suite run's recorded conversations.

Every `t.send` is answered from the record by a replaying agent (no agent call is made); assertions, scoped
checks and judges are evaluated afresh (judges from their cache or the model), so a changed check or rubric is
scored without paying for the agent again. The result is a new suite run (kind `rescore`) linked to the original.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from niceeval._run.storing import StoredPlan

if TYPE_CHECKING:
    from niceeval._run.discovery import EvalEntry
    from niceeval.agents._runtime import ReplayAgent
    from niceeval.store import SuiteRunStart
    from niceeval.store._recorder import Recorder


def plan_rescore(recorder: Recorder, start: SuiteRunStart, entries: list[EvalEntry], ref: str) -> StoredPlan:
    """Rescore the recorded eval runs of suite run `ref` that `entries` still define.

    Sandbox evals are left out: their agent edited files, and the edits are not part of the record.
    """
    from niceeval.agents._runtime import RecordedTurn, ReplayAgent

    store = recorder.store
    run_id = store.resolve(ref)
    recorded = store.outcomes(run_id)
    by_id = {e.id: e for e in entries}
    planned = [p.id for p in store.planned(run_id) if p.id in by_id]
    sandboxed = [eval_id for eval_id in planned if by_id[eval_id].spec.fixture is not None]
    chosen = [by_id[eval_id] for eval_id in planned if eval_id not in sandboxed]
    runs = max((index + 1 for _, index in recorded), default=1)
    never_ran = frozenset((e.id, i) for e in chosen for i in range(runs) if (e.id, i) not in recorded)

    def replay(eval_id: str, run_index: int) -> ReplayAgent:
        turns = store.turns(run_id, eval_id, run_index)
        return ReplayAgent(
            turns=[RecordedTurn(sent=t.sent, reply=t.reply, data=t.data, events=tuple(t.events)) for t in turns]
        )

    notes = [f"suite run {run_id} recorded no eval that is found now: nothing to rescore."] if not chosen else []
    if sandboxed:
        notes.append(f"{len(sandboxed)} sandbox evals are not rescored (file edits are not recorded).")
    return StoredPlan(
        entries=chosen,
        runs=runs,
        sink=recorder.sink(start.model_copy(update={"kind": "rescore", "parent_id": run_id})),
        done=never_ran,
        notes=tuple(notes),
        agent_for_run=replay,
    )
