"""Wiring the results store into `niceeval run`: which store, the suite run's identity, the sink.

The store URL comes from, first to last: `--no-store`, `--store URL`, `NICEEVAL_STORE`, the config's `store=`,
and the default, a SQLite file at `<root>/.niceeval/results.db`. The store's `Recorder` (its door for the runner,
`niceeval.store._recorder`) writes; the runner hands finished runs to its sink like to any reporter (first, so a
run is stored before reporters see it).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from niceeval._core.wording import plural

if TYPE_CHECKING:
    from niceeval._core.results import RunResult
    from niceeval._core.summary import PlannedEval
    from niceeval._run.discovery import EvalEntry
    from niceeval._run.experiments import ExperimentRun
    from niceeval._run.shard import Shard
    from niceeval.store import SuiteRunInfo, SuiteRunStart
    from niceeval.store._recorder import Lease, Recorder, StoreSink

ENV_VAR = "NICEEVAL_STORE"


@dataclass(frozen=True, kw_only=True, slots=True)
class StoreRequest:
    """What the command line and config say about the store."""

    flag: str | None = None
    """`--store URL`."""
    off: bool = False
    """`--no-store`."""
    configured: str | bool | None = None
    """The config's `store=` (False: off)."""
    root: Path


def store_location(request: StoreRequest) -> str | None:
    """The store URL or path to use, or None when the store is off."""
    if request.off:
        return None
    chosen = request.flag or os.environ.get(ENV_VAR) or None
    if chosen is None:
        if request.configured is False:
            return None
        chosen = request.configured if isinstance(request.configured, str) else None
    if chosen is None:
        from niceeval.store import DEFAULT_PATH  # not SQLAlchemy: `--no-store` and the cases probe skip it

        return str(request.root / DEFAULT_PATH)
    return chosen


def open_recorder(request: StoreRequest) -> Recorder | None:
    """What records the suite run (None when the store is off): its store's recorder, which imports SQLAlchemy only
    to create or migrate the store, or when something reads it; `StoreError` (exit 2) when it cannot be opened."""
    location = store_location(request)
    if location is None:
        return None
    from niceeval.store._recorder import Recorder

    return Recorder.open(location, request.root)


def new_run_id() -> str:
    """A new suite run id: 12 hex characters (a unique prefix of 4+ names it on the command line)."""
    return uuid.uuid4().hex[:12]


def _git(root: Path, *args: str) -> str | None:
    try:
        proc = subprocess.run(
            ["git", *args], cwd=root, capture_output=True, text=True, timeout=10, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout.strip() if proc.returncode == 0 else None


def _git_state(root: Path) -> tuple[str | None, str | None, bool | None]:
    """The commit checked out in `root`, its branch (`HEAD` when detached) and whether tracked files changed; all
    None outside a repository or before its first commit. One `git status` tells all three."""
    status = _git(root, "status", "--porcelain=v2", "--branch", "--untracked-files=no")
    if status is None:
        return None, None, None
    head = dict(line[2:].split(" ", 1) for line in status.splitlines() if line.startswith("# ") and " " in line[2:])
    commit = head.get("branch.oid")
    if commit is None or commit == "(initial)":
        return None, None, None
    branch = head.get("branch.head")
    changed = any(not line.startswith("#") for line in status.splitlines())
    return commit, "HEAD" if branch in (None, "(detached)") else branch, changed


def suite_start(
    root: Path,
    config_file: Path | None,
    *,
    strict: bool,
    min_pass_rate: float,
    command: Sequence[str] | None = None,
) -> SuiteRunStart:
    """The identity and context of a new suite run: command line, git commit/branch/dirty, config digest.

    `command` defaults to this process's `niceeval ...` command line; secrets in it (the password of a
    `--store postgresql://user:PASSWORD@host/db`, a token) are redacted before it is stored and shown.
    """
    from niceeval._core.redact import Redactor
    from niceeval.store import SuiteRunStart

    redactor = Redactor.from_environment()
    commit, branch, dirty = _git_state(root)
    digest = hashlib.sha256(config_file.read_bytes()).hexdigest() if config_file and config_file.is_file() else None
    return SuiteRunStart(
        id=new_run_id(),
        command=[redactor.text(part) for part in (command if command is not None else ["niceeval", *sys.argv[1:]])],
        root=str(root),
        git_commit=commit,
        git_branch=branch,
        git_dirty=dirty,
        config_digest=digest,
        strict=strict,
        min_pass_rate=min_pass_rate,
    )


@dataclass(frozen=True, kw_only=True, slots=True)
class StoredPlan:
    """What a run recorded in the store does: which evals, how many runs, which are done already."""

    entries: Iterable[EvalEntry]
    runs: int
    sink: StoreSink
    done: frozenset[tuple[str, int]] = frozenset()
    """`(eval_id, run_index)` not to run again."""
    prior: Iterable[RunResult] = ()
    """Their results, replayed to the reporters so the suite's report and exit code cover the whole suite run."""
    notes: tuple[str, ...] = ()
    """Things the user should know (planned evals that no longer exist)."""
    agent_for_run: Callable[[str, int], Any] | None = None
    """`rescore`: the replaying agent of each `(eval_id, run_index)`."""


def plan_new(recorder: Recorder, start: SuiteRunStart, entries: Iterable[EvalEntry], runs: int | None) -> StoredPlan:
    """A new suite run of `entries`."""
    return StoredPlan(entries=entries, runs=runs or 1, sink=recorder.sink(start))


def plan_experiment(
    recorder: Recorder,
    start: SuiteRunStart,
    entries: list[EvalEntry],
    runs: int | None,
    experiment: ExperimentRun,
    identities: Mapping[str, str],
) -> StoredPlan:
    """A new suite run of one experiment (`start.experiment`): the slots its earlier runs recorded under the same
    identity are carried (recorded by reference, replayed to the reporters), the others run."""
    carry = experiment.carry(recorder.store, entries, runs or 1, identities)
    carried = len(carry.results)
    notes = (f"experiment {experiment.id}: {plural(carried, 'attempt')} carried from earlier runs (--rerun runs "
             "them again)",) if carried else ()  # fmt: skip
    return StoredPlan(
        entries=entries, runs=runs or 1, sink=recorder.sink(start), done=carry.done, prior=carry.results, notes=notes
    )


def plan_digest(plan: Iterable[PlannedEval], *, strict: bool, min_pass_rate: float) -> str:
    """A digest of what a suite run plans (eval ids and runs, the verdict rule): every shard of one must agree."""
    digest = hashlib.sha256(f"strict={strict} min_pass_rate={min_pass_rate!r}\n".encode())
    for line in sorted(f"{p.id}\t{p.runs}" for p in plan):
        digest.update(line.encode() + b"\n")
    return digest.hexdigest()


def plan_shard(
    recorder: Recorder, start: SuiteRunStart, entries: list[EvalEntry], runs: int | None, shard: Shard
) -> StoredPlan:
    """Create suite run `start.id` (`--run-id`) or join it, as shard `shard`; the shard runs only its eval runs.

    The suite run records the whole plan (every shard computes the same one), so it knows what is missing while
    shards are out. A shard that started before and did not finish (killed, cancelled, a store outage) runs only
    its eval runs not yet stored, as `--resume` would; the stored ones are replayed to its reporters.
    """
    from niceeval._core.summary import PlannedEval

    count = runs or 1
    plan = [
        PlannedEval(id=e.id, file=e.file, line=e.spec.line, tags=e.tags, runs=e.spec.runs or count, cluster=e.cluster)
        for e in entries
    ]
    digest = plan_digest(plan, strict=start.strict, min_pass_rate=start.min_pass_rate)
    joined = recorder.join_shard(start, plan, shard=shard.index, count=shard.count, digest=digest)
    mine = shard.select(entries, count)
    sink = recorder.sink(start, shard=shard.index)
    if joined.attempt == 1:
        return StoredPlan(entries=mine, runs=count, sink=sink)
    store = recorder.store
    by_id = {e.id: e for e in mine}
    done = frozenset(key for key in store.outcomes(start.id) if key[0] in by_id and shard.holds(by_id[key[0]], key[1]))
    prior = (
        result
        for result in store.results(start.id, eval_ids=sorted({eval_id for eval_id, _ in done}))
        if (result.eval_id, result.run_index) in done
    )
    note = (
        f"shard {shard} of suite run {start.id} started before and did not finish (this is attempt {joined.attempt}):"
        f" its {len(done)} eval runs already stored are not run again. If that attempt is still running somewhere,"
        " stop one of the two."
    )
    return StoredPlan(entries=mine, runs=count, sink=sink, done=done, prior=prior if done else (), notes=(note,))


def plan_resume(
    recorder: Recorder, start: SuiteRunStart, entries: list[EvalEntry], runs: int | None, ref: str | None
) -> StoredPlan:
    """Complete suite run `ref` (default: the latest unfinished one) in place: only its missing eval runs run."""
    from niceeval.store import StoreError

    store = recorder.store
    if ref is None:
        # a pytest session or a calibration is finished by running it again, not by `niceeval run --resume`
        open_runs = store.runs(limit=100, status=["running", "interrupted", "incomplete"])
        unfinished = [r for r in open_runs if r.kind in ("run", "rerun", "rescore")]
        if not unfinished:
            raise StoreError(f"no unfinished suite run to resume in {store.url}; `niceeval runs` lists them.")
        info = unfinished[0]
    else:
        info = store.run(ref).run
        if info.status == "finished":
            raise StoreError(
                f"suite run {info.id} already finished: nothing to resume. "
                f"`niceeval run --rerun-failed {info.id}` reruns its failed evals."
            )
    run_id = info.id
    lease = recorder.lease(run_id)  # a second `--resume` of the same run refuses here, before anything runs
    try:
        return _resume_plan(recorder, start, entries, runs, info, lease)
    except BaseException:
        lease.release()
        raise


def _resume_plan(
    recorder: Recorder,
    start: SuiteRunStart,
    entries: list[EvalEntry],
    runs: int | None,
    info: SuiteRunInfo,
    lease: Lease,
) -> StoredPlan:
    from niceeval.store import StoreError

    store, run_id = recorder.store, info.id
    info = store.run(run_id).run  # again, now that no one else writes it: a resume that just ended may have finished it
    if info.status == "finished":
        raise StoreError(f"suite run {run_id} already finished: nothing to resume.")
    if info.shard_count is not None:
        shard = f" --shard I/{info.shard_count}" if info.shard_count > 1 else ""
        raise StoreError(
            f"suite run {run_id} is written with --run-id ({info.shards_done} of {info.shard_count} shards finished), "
            f"so it is completed the same way: `niceeval run --run-id {run_id}{shard}` again runs only the missing "
            "eval runs of that shard (`niceeval report` lists the missing shards)."
        )
    planned = store.planned(run_id)
    by_id = {e.id: e for e in entries}
    gone = [p.id for p in planned if p.id not in by_id]
    planned_gone = f"{plural(len(gone), 'eval')} planned in suite run {run_id}"
    notes = (f"{planned_gone} not found now, so not run: {', '.join(gone)}",)
    return StoredPlan(
        entries=[by_id[p.id] for p in planned if p.id in by_id],
        runs=max([runs or 0, *(p.runs for p in planned)]),
        sink=recorder.sink(start.model_copy(update={"id": run_id}), resume=True, lease=lease),
        done=frozenset(store.outcomes(run_id)),
        prior=store.results(run_id),
        notes=notes if gone else (),
    )


def plan_rerun(
    recorder: Recorder, start: SuiteRunStart, entries: list[EvalEntry], runs: int | None, ref: str | None
) -> StoredPlan:
    """A new suite run (kind `rerun`) of the failed eval runs of suite run `ref` (default: the latest).

    The passing runs of those evals are carried over, so each eval's pass rate covers all its runs; with `--runs N`
    beyond the original count, the extra run indexes run too.
    """
    store = recorder.store
    run_id = store.resolve(ref or "latest")
    info = store.run(run_id).run
    bad = {"failed", "scored"} if info.strict else {"failed"}
    outcomes = store.outcomes(run_id)
    failed = {eval_id for (eval_id, _), outcome in outcomes.items() if outcome in bad}
    kept = frozenset(key for key, outcome in outcomes.items() if key[0] in failed and outcome not in bad)
    previous = max((index + 1 for _, index in outcomes), default=1)
    carried = (r for r in store.results(run_id, eval_ids=sorted(failed)) if (r.eval_id, r.run_index) in kept)
    rerun = start.model_copy(update={"kind": "rerun", "parent_id": run_id})
    return StoredPlan(
        entries=[e for e in entries if e.id in failed],
        runs=max(runs or 0, previous),
        sink=recorder.sink(rerun),
        done=kept,
        prior=carried,
        notes=() if failed else (f"suite run {run_id} has no failed evals: nothing to rerun.",),
    )
