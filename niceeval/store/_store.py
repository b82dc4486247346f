"""`Store`: one results store (SQLite file or PostgreSQL database) and its read API (a `Recorder` writes runs)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import Any

from sqlalchemy import Connection, Engine

from niceeval._core.outcome import Outcome
from niceeval._core.results import RunResult
from niceeval._core.summary import PlannedEval
from niceeval.store import _compare, _diff, _experiments, _frames, _kept_diffs, _read, _report_rows, _shards
from niceeval.store._compare import CompareOptions
from niceeval.store._compared import SetupComparison
from niceeval.store._damage import damage_message, integrity_problems
from niceeval.store._diff import DiffOptions
from niceeval.store._driver import UnsupportedUrl, parse_url
from niceeval.store._frames import FrameKind
from niceeval.store._lease import writer_gone
from niceeval.store._models import (
    AcceptanceInfo,
    EvalRunInfo,
    RunDiff,
    ShardInfo,
    SuiteRunDetail,
    SuiteRunInfo,
    SuiteStatus,
    TurnRecord,
)
from niceeval.store._open import StoreError, create_store_engine, resolve_url
from niceeval.store._report_rows import StoredRun


class Store:
    """A results store: every suite run kept, read back for `niceeval runs/show/diff` and the viewer.

    Open one with `Store.open(url)`; it is safe to share between threads (each call takes its own connection).
    Suite runs are named by id; every read method also takes a unique id prefix or `latest` (`latest~1`: the one
    before it).

    Example:
        >>> with Store.open("sqlite:///.niceeval/results.db") as store:  # doctest: +SKIP
        ...     for run in store.runs(limit=5):
        ...         print(run.id, run.status, run.pass_rate)
    """

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    @classmethod
    def open(cls, url: str, *, root: Path | None = None) -> Store:
        """Open (and create or migrate) the store at `url`: a SQLAlchemy URL, `postgresql://...`, or a file path.

        Raises:
            StoreError: unreachable, not a database, or written by a newer niceeval (the message says what to do).
        """
        return cls(create_store_engine(resolve_url(url, root or Path.cwd())))

    @property
    def url(self) -> str:
        """The store's URL with any password masked."""
        return self.engine.url.render_as_string(hide_password=True)

    def close(self) -> None:
        """Release the store's connections."""
        self.engine.dispose()

    def damage(self, exc: BaseException) -> str | None:
        """A message naming the damaged store when `exc` says its file is damaged, else None."""
        return damage_message(exc, self.engine.url.database or self.url)

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()
        damaged = self.damage(exc) if exc is not None else None
        if damaged is not None:  # a garbled page met while reading: said as such, not as a traceback
            raise StoreError(damaged) from None

    def check(self) -> list[str]:
        """Read every page of the store (`PRAGMA integrity_check` on SQLite): the problems found, [] if none."""
        return integrity_problems(self.engine)

    @contextmanager
    def _reading(self) -> Iterator[Connection]:
        with self.engine.connect() as conn:
            yield conn

    def runs(
        self,
        *,
        limit: int = 20,
        offset: int = 0,
        status: Sequence[SuiteStatus] | None = None,
        experiment: str | None = None,
    ) -> list[SuiteRunInfo]:
        """Suite runs, latest first (only those in `status`, and of `experiment`, when given)."""
        with self._reading() as conn:
            return _read.list_runs(conn, limit=limit, offset=offset, status=status, experiment=experiment)

    def resolve(self, ref: str) -> str:
        """The full id of the suite run `ref` names: an id, a unique prefix of 4+ characters, or `latest`; followed by
        `~N`, the suite run N before that one in `runs()`' order (`latest~1`)."""
        with self._reading() as conn:
            return _read.resolve(conn, ref)

    def run(self, ref: str) -> SuiteRunDetail:
        """A suite run: its header and totals, its plan, and a summary of each eval run."""
        with self._reading() as conn:
            return _read.get_run(conn, _read.resolve(conn, ref))

    def info(self, ref: str) -> SuiteRunInfo:
        """A suite run's header and totals alone, without its eval runs (one row, however large the run)."""
        with self._reading() as conn:
            return _read.header(conn, _read.resolve(conn, ref))

    def evals_with_case(self, ref: str, prefixes: Sequence[str]) -> list[str]:
        """The ids of a suite run's evals with a run whose case id starts with one of `prefixes`, sorted."""
        with self._reading() as conn:
            return _read.evals_with_case(conn, _read.resolve(conn, ref), prefixes)

    def planned(self, ref: str) -> list[PlannedEval]:
        """The evals a suite run planned, in plan order."""
        with self._reading() as conn:
            return _read.planned(conn, _read.resolve(conn, ref))

    def walk_planned(self, ref: str) -> Iterator[PlannedEval]:
        """The evals a suite run planned, in plan order, streamed: a walk holds one record at a time (`niceeval
        report` of a run of 100,000 evals walks its plan rather than keep it)."""
        with self._reading() as conn:
            yield from _read.walk_planned(conn, _read.resolve(conn, ref))

    def planned_count(self, ref: str) -> int:
        """How many evals a suite run planned."""
        with self._reading() as conn:
            return _read.planned_count(conn, _read.resolve(conn, ref))

    def shared_clusters(self, ref: str) -> dict[str, int]:
        """How many planned evals each cluster shared by evals holds (a case's variants, `define_eval(cluster=...)`)."""
        with self._reading() as conn:
            return _read.shared_clusters(conn, _read.resolve(conn, ref))

    def outcomes(self, ref: str) -> dict[tuple[str, int], Outcome]:
        """The outcome of every eval run stored in a suite run, by `(eval_id, run_index)`."""
        with self._reading() as conn:
            return _read.outcomes(conn, _read.resolve(conn, ref))

    def results(self, ref: str, *, eval_ids: Sequence[str] | None = None) -> Iterator[RunResult]:
        """Full records of a suite run's eval runs (optionally only `eval_ids`), streamed a chunk at a time."""
        with self._reading() as conn:
            yield from _read.results(conn, _read.resolve(conn, ref), eval_ids=eval_ids)

    def stored_runs(self, ref: str, *, records: bool = True) -> Iterator[StoredRun]:
        """Every eval run of a suite run as its reports read it (`StoredRun`: each run's JSON record made from its
        rows, and its `RunResult` without judge calls and events), streamed in batches: `niceeval report`'s read.

        `records=False`: no JSON records (each `json` is None), read faster (no judge calls, spans or untimed
        events), for reports other than the JSON one."""
        with self._reading() as conn:
            yield from _report_rows.stored_runs(conn, _read.resolve(conn, ref), records=records)

    def eval_run(self, ref: str, eval_id: str, run_index: int = 0) -> RunResult:
        """One eval run in full: assertions (with judge calls), events, spend."""
        with self._reading() as conn:
            return _read.eval_run(conn, _read.resolve(conn, ref), eval_id, run_index)

    def trace_results(self, trace_id: str) -> list[RunResult]:
        """Every stored result of production trace `trace_id` (the online evals `niceeval watch` ran on it), latest
        first; each holds the trace's spans."""
        with self._reading() as conn:
            return _read.trace_results(conn, trace_id)

    def turns(self, ref: str, eval_id: str, run_index: int = 0) -> list[TurnRecord]:
        """One eval run's exchanges with the agent, each with the events it spans (what `rescore` replays)."""
        with self._reading() as conn:
            return _read.recorded_turns(conn, _read.resolve(conn, ref), eval_id, run_index)

    def shards(self, ref: str) -> list[ShardInfo]:
        """The shards of a suite run (named with `--run-id`) that have reported, by number."""
        with self._reading() as conn:
            return _shards.list_shards(conn, _read.resolve(conn, ref))

    def pass_rates(self, runs: Sequence[SuiteRunInfo]) -> dict[str, float | None]:
        """Each suite run's pass rate over its counted eval runs (`scored` too unless strict), by id: the rate
        the console and the JSON report give (`SuiteRunInfo.pass_rate` is the share of evals)."""
        with self._reading() as conn:
            return _read.pass_rates(conn, runs)

    def abandoned(self, runs: Sequence[SuiteRunInfo]) -> set[str]:
        """The ids of those of `runs` that say `running` but that no process writes any more: their writer was
        killed, or could not record their end (a full disk). Told by the suite run's lease, which its writer holds
        until it ends, however it ends; shards take none, so a suite run written by shards is never counted."""
        try:
            target = parse_url(self.engine.url.render_as_string(hide_password=False))
        except UnsupportedUrl:
            return set()
        running = [r.id for r in runs if r.status == "running" and r.shard_count is None]
        return {run_id for run_id in running if writer_gone(target, run_id)}

    def history(self, eval_id: str, *, limit: int = 50) -> list[EvalRunInfo]:
        """The eval's runs across suite runs: the latest suite run first, each suite run's runs in order."""
        with self._reading() as conn:
            return _read.history(conn, eval_id, limit=limit)

    def runs_df(self, *, limit: int | None = None, as_: FrameKind = "pandas") -> Any:
        """One row per suite run, latest first (the latest `limit`, or all), as a pandas or polars DataFrame.

        Columns (docs/store.md): `run_id`, `started_at`, `status`, `kind`, git, the totals `niceeval runs` shows,
        `pass_rate`, costs and tokens. Needs the `analysis` extra (`pip install 'niceeval[analysis]'`).
        """
        with self._reading() as conn:
            rows = _frames.run_rows(conn, limit)
        return _frames.frame(_frames.RUN_COLUMNS, rows, as_, "runs_df")

    def evals_df(self, ref: str, *, as_: FrameKind = "pandas") -> Any:
        """One row per eval run of suite run `ref`, in plan order, as a pandas or polars DataFrame.

        Columns (docs/store.md): `run_id`, `eval_id`, `run_index`, `case_id`, `variant`, `tags`, `outcome`,
        `mean_score`, assertion counts, `error`, timing, spend. Read by one query: no events are loaded.
        """
        with self._reading() as conn:
            rows = _frames.eval_rows(conn, _read.resolve(conn, ref))
        return _frames.frame(_frames.EVAL_COLUMNS, rows, as_, "evals_df")

    def assertions_df(self, ref: str, *, as_: FrameKind = "pandas") -> Any:
        """One row per assertion of suite run `ref`'s eval runs, as a pandas or polars DataFrame.

        Columns (docs/store.md): the eval run's key (`run_id`, `eval_id`, `run_index`, `case_id`), then the
        assertion's `position`, `name`, `key`, `severity`, `state`, `score`, `threshold`, `reason`, ...
        """
        with self._reading() as conn:
            rows = _frames.assertion_rows(conn, _read.resolve(conn, ref))
        return _frames.frame(_frames.ASSERTION_COLUMNS, rows, as_, "assertions_df")

    def slots(self, experiment: str) -> list[EvalRunInfo]:
        """Every eval run `experiment`'s suite runs executed (with its slot identity), the latest suite run's first:
        what a new run of the experiment may carry."""
        with self._reading() as conn:
            return _experiments.slots(conn, experiment)

    def acceptances(self, experiment: str) -> list[AcceptanceInfo]:
        """The eval runs `experiment` adopted with `niceeval accept`, oldest first."""
        with self._reading() as conn:
            return _experiments.accepted(conn, experiment)

    def diff(self, base: str, head: str, options: DiffOptions | None = None) -> RunDiff:
        """What changed from suite run `base` to `head`, both judged by one verdict rule, weighed against noise.

        A run compared with itself, or two runs with no eval in common, raise ConfigError. The diff of two closed
        runs is kept in the store and read back while neither changes (`_kept_diffs`).
        """
        options = options or DiffOptions()
        with self._reading() as conn:
            base_id, head_id = _read.resolve(conn, base), _read.resolve(conn, head)
            key = _kept_diffs.pair_key(conn, base_id, head_id, options)
            kept = None if key is None else _kept_diffs.recall(conn, key)
            if kept is not None:
                return kept
            found = _diff.diff(conn, base_id, head_id, options)
        if key is not None:
            _kept_diffs.keep(self.engine, key, found)
        return found

    def kept_diff(self, base: str, head: str, options: DiffOptions | None = None) -> RunDiff | None:
        """The diff of `base` and `head` kept in the store, never computed here: None while either run is still
        running, or when the pair was not compared with these options since both closed (`diff` computes it)."""
        options = options or DiffOptions()
        with self._reading() as conn:
            key = _kept_diffs.pair_key(conn, _read.resolve(conn, base), _read.resolve(conn, head), options)
            return None if key is None else _kept_diffs.recall(conn, key)

    def compare(self, refs: Sequence[str], options: CompareOptions | None = None) -> SetupComparison:
        """Several setups side by side, each measured on its own with its intervals, each pair on the cases both
        ran, and the Pareto front on quality, cost and latency. A setup is an experiment id (its latest finished
        suite run) or a suite run (an id, a unique prefix, or `latest`).

        Fewer than two setups, one suite run named twice, or an experiment with no finished suite run raise
        ConfigError.
        """
        options = options or CompareOptions()
        with self._reading() as conn:
            setups = [_compare.resolve_setup(conn, ref) for ref in refs]
            measured = _compare.measure_setups(conn, setups, options)
        return _compare.compare_setups(measured, self.diff)  # each pair's diff kept, as `niceeval diff` keeps it
