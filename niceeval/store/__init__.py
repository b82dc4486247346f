"""The results store: every suite run kept in SQLite (default) or PostgreSQL, read back by id.

The read API (what `niceeval runs/show/diff` and the viewer use):

- `Store.runs(limit=20)`: suite runs, latest first (`SuiteRunInfo`: status, commit, totals, spend).
- `Store.run(ref)`: one suite run with its plan and a summary line per eval run (`SuiteRunDetail`).
- `Store.eval_run(ref, eval_id, run_index=0)`: one eval run in full, as the `RunResult` the runner produced.
- `Store.results(ref, eval_ids=None)`: every eval run of a suite run in full, streamed.
- `Store.stored_runs(ref, records=True)`: every eval run of a suite run as its reports read it (`StoredRun`: its
  JSON report record made from its rows, none with `records=False`, and a light `RunResult`), streamed in batches
  (`niceeval report` and `export`); each with its eval as the plan has it (`StoredRun.planned`, `.position`).
- `Store.walk_planned(ref)`, `Store.planned_count(ref)`, `Store.shared_clusters(ref)`: a suite run's plan streamed
  (each walk reads it again), its size, and the planned evals of each cluster shared by evals (a report's replay
  holds no record per planned eval).
- `Store.trace_results(trace_id)`: the stored online results of one production trace (`niceeval watch`).
- `Store.turns(ref, eval_id, run_index=0)`: one eval run's exchanges with the agent (`TurnRecord`).
- `Store.history(eval_id)`: the eval's runs across suite runs, latest first (`EvalRunInfo`).
- `Store.shards(ref)`: the shards of a suite run written with `--run-id` that have reported (`ShardInfo`).
- `Store.abandoned(runs)`: which of them say `running` though no process writes them any more (killed, or their
  end could not be written): `niceeval runs` shows those as interrupted.
- `Store.slots(experiment)`, `Store.acceptances(experiment)`: what an experiment's runs recorded, slot by slot,
  and the runs it adopted (`niceeval accept`); `Store.runs(experiment=...)` lists its suite runs.
- `Store.diff(base, head, DiffOptions(...))`: both runs judged by one rule, changes weighed against noise, new and
  gone evals, scores that moved (`RunDiff`).
- `Store.runs_df()`, `Store.evals_df(ref)`, `Store.assertions_df(ref)`: one row per suite run, eval run, assertion,
  as a pandas DataFrame (or polars, `as_="polars"`): the `analysis` extra, imported only when called.
- `Store.compare(refs, CompareOptions(...))`: several setups, each with its intervals, each pair on its shared
  cases, and the Pareto front (`SetupComparison`; `niceeval exp compare` and the viewer's setups page).

`read_inspect_log(path)` reads an Inspect log as eval runs (`InspectLog`): what `niceeval store import` stores as
a suite run of kind `import`, to diff against niceeval's runs of the same samples.

A suite run is named by its id (`ref` may also be a unique prefix of 4+ characters, or `latest`, and `~N` after
any of them names the one N before it); inside it an eval run is keyed by `(eval_id, run_index)`. See docs/store.md.

Beside these: `niceeval.store.cases` (the test cases written in the viewer), `niceeval.store.tables` (the tables,
for read-only queries the API does not offer), and, for the runner alone, `store/_recorder.py`: the `Recorder` that
writes suite runs, and the `StoreSink` that records one as it runs.

Names load on first use: `niceeval run` imports only this package's light modules (the default path, the cases
probe `may_hold_cases`, and the recorder, which writes through the database driver once the store exists), never
SQLAlchemy.

Design: docs/design/store.md
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from niceeval._core.lazy import lazy_getattr

if TYPE_CHECKING:
    from niceeval.store._compare import CompareOptions
    from niceeval.store._compared import Measured, SetupComparison
    from niceeval.store._diff import DiffOptions
    from niceeval.store._errors import StoreError
    from niceeval.store._inspect import InspectLog, read_inspect_log
    from niceeval.store._models import (
        AcceptanceInfo,
        EvalRunInfo,
        OutcomeChange,
        PlannedEvalInfo,
        RunDiff,
        ScoreChange,
        ShardInfo,
        SuiteRunDetail,
        SuiteRunInfo,
        TurnRecord,
    )
    from niceeval.store._peek import may_hold_cases
    from niceeval.store._read import RunNotFound
    from niceeval.store._report_rows import StoredRun
    from niceeval.store._store import Store
    from niceeval.store._suite_run import SuiteRunStart
    from niceeval.store._url import DEFAULT_PATH

_HOMES = {
    "AcceptanceInfo": "niceeval.store._models",
    "CompareOptions": "niceeval.store._compare",
    "Measured": "niceeval.store._compared",
    "SetupComparison": "niceeval.store._compared",
    "DiffOptions": "niceeval.store._diff",
    "DEFAULT_PATH": "niceeval.store._url",
    "EvalRunInfo": "niceeval.store._models",
    "InspectLog": "niceeval.store._inspect",
    "OutcomeChange": "niceeval.store._models",
    "PlannedEvalInfo": "niceeval.store._models",
    "RunDiff": "niceeval.store._models",
    "RunNotFound": "niceeval.store._read",
    "ScoreChange": "niceeval.store._models",
    "ShardInfo": "niceeval.store._models",
    "Store": "niceeval.store._store",
    "StoreError": "niceeval.store._errors",
    "StoredRun": "niceeval.store._report_rows",
    "SuiteRunDetail": "niceeval.store._models",
    "SuiteRunInfo": "niceeval.store._models",
    "SuiteRunStart": "niceeval.store._suite_run",
    "TurnRecord": "niceeval.store._models",
    "may_hold_cases": "niceeval.store._peek",
    "read_inspect_log": "niceeval.store._inspect",
}

__all__ = [
    "AcceptanceInfo",
    "CompareOptions",
    "Measured",
    "SetupComparison",
    "DiffOptions",
    "DEFAULT_PATH",
    "EvalRunInfo",
    "InspectLog",
    "OutcomeChange",
    "PlannedEvalInfo",
    "RunDiff",
    "RunNotFound",
    "ScoreChange",
    "ShardInfo",
    "Store",
    "StoreError",
    "StoredRun",
    "SuiteRunDetail",
    "SuiteRunInfo",
    "SuiteRunStart",
    "TurnRecord",
    "may_hold_cases",
    "read_inspect_log",
]

__getattr__ = lazy_getattr(__name__, _HOMES)


def __dir__() -> list[str]:
    return sorted(__all__)
