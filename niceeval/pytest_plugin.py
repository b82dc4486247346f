"""The pytest plugin (entry point `pytest11`, on when niceeval is installed; `-p no:niceeval` turns it off).

- `pytest evals/` collects `define_eval` functions as test items: ids `evals/file.py::name`, tags as markers, so
  `-k`, `-m`, `-x`, `--lf` and pytest-xdist work as for any test. Only files under the eval paths of the project's
  `niceeval.config.py` are collected, so a project's ordinary tests (even ones that define evals inside test
  functions) are left alone, and nothing is collected where there is no config file.
- The `niceeval` fixture gives an ordinary test the context `t`; the test fails when its folded outcome fails.

Outcomes: `passed` passes; `failed` fails with the assertion table as the failure text; `skipped` skips; `scored`
passes with a `NiceevalScoredWarning` and fails under `--niceeval-strict`.

A session that runs evals is recorded in the results store as one suite run (kind `pytest`; see
`_run/pytest_store.py`), opened on the first eval or fixture run; under pytest-xdist the workers write one suite
run together. A store that cannot be used is a warning at the end of the report, never a failed test.

This module is imported by every pytest run on the machine, so it imports nothing heavy at the top.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from niceeval._core.results import RunResult
    from niceeval._core.summary import PlannedEval
    from niceeval._eval.config import Config
    from niceeval._eval.context import SyncEvalContext
    from niceeval._run.discovery import EvalEntry
    from niceeval._run.execute import ExecOptions
    from niceeval._run.fixture_run import InlineRun, InlineTarget
    from niceeval._run.loop_host import LoopHost
    from niceeval._run.pytest_store import SessionRecording, StoreNote, XdistWorker

_CONFIG_FILE = "niceeval.config.py"


class NiceevalScoredWarning(UserWarning):
    """An eval passed with a soft miss (`scored`); `--niceeval-strict` makes it fail instead."""


def pytest_addoption(parser: pytest.Parser) -> None:
    """Declare the `--niceeval-*` options: strictness, the judge model and cache, the results store."""
    group = parser.getgroup("niceeval", "niceeval evals")
    group.addoption("--niceeval-strict", action="store_true", help="soft misses (`scored`) fail too")
    group.addoption("--niceeval-grader", metavar="MODEL", help="judge model for every judge call")
    group.addoption("--niceeval-no-cache", action="store_true", help="always call judge models (no verdict cache)")
    group.addoption("--niceeval-cache-only", action="store_true", help="replay judge verdicts from the cache only")
    group.addoption(
        "--niceeval-fail-on-inconclusive", action="store_true", help="inconclusive assertions count as misses"
    )
    group.addoption(
        "--niceeval-store",
        metavar="URL",
        help="results store: a SQLite path or postgresql://... (default: as `niceeval run`, .niceeval/results.db)",
    )
    group.addoption("--niceeval-no-store", action="store_true", help="do not record this session in the results store")


def pytest_configure(config: pytest.Config) -> None:
    """Refuse options that exclude each other, then register the session's niceeval plugin."""
    if config.getoption("niceeval_no_cache") and config.getoption("niceeval_cache_only"):
        raise pytest.UsageError("--niceeval-no-cache and --niceeval-cache-only exclude each other; pass one.")
    if config.getoption("niceeval_store") and config.getoption("niceeval_no_store"):
        raise pytest.UsageError("--niceeval-store and --niceeval-no-store exclude each other; pass one.")
    config.pluginmanager.register(_Session(config), "niceeval-session")


@dataclass(kw_only=True)
class _Project:
    """The niceeval project pytest runs in: its root and config (loaded on first need)."""

    root: Path
    has_config: bool
    config: Config | None = None
    error: Exception | None = None
    eval_dirs: list[Path] = field(default_factory=list)


class _Session:
    """Per pytest session: the project, one event loop shared by every eval and fixture run, the store recording."""

    def __init__(self, config: pytest.Config) -> None:
        self.pytest_config = config
        self._project: _Project | None = None
        self._host: LoopHost | None = None
        self._recording: SessionRecording | None = None
        self._store_off = False
        self._load_problems: list[tuple[str, str]] = []
        """Eval files that did not collect: `(node id, error)`, recorded as the suite run's problems."""
        self._notes: list[StoreNote] = []
        """What became of the recording: this process's, or each xdist worker's on the controller."""

    def project(self) -> _Project:
        if self._project is None:
            start = Path(self.pytest_config.rootpath)
            root = next((d for d in (start, *start.parents) if (d / _CONFIG_FILE).is_file()), start)
            self._project = _Project(root=root, has_config=(root / _CONFIG_FILE).is_file())
        return self._project

    def config(self) -> Config:
        """The project's niceeval config (defaults without a config file); a broken config raises each time."""
        project = self.project()
        if project.config is None and project.error is None:
            from niceeval._eval.config import Config, load_config

            try:
                project.config = load_config(project.root) if project.has_config else Config(root=project.root)
                project.eval_dirs = [(project.root / p).resolve() for p in project.config.evals]
            except Exception as exc:
                project.error = exc
        if project.error is not None:
            raise project.error
        assert project.config is not None
        return project.config

    def host(self) -> LoopHost:
        if self._host is None:
            from niceeval._run.loop_host import LoopHost

            self._host = LoopHost(
                self.config().root,
                no_cache=self.pytest_config.getoption("niceeval_no_cache"),
                cache_only=self.pytest_config.getoption("niceeval_cache_only"),
            )
            self._host.open()
        return self._host

    def exec_options(self) -> ExecOptions:
        from niceeval._run.execute import ExecOptions

        config, option = self.config(), self.pytest_config.getoption
        return ExecOptions(
            timeout=config.timeout,
            agent=config.agent,
            fail_on_inconclusive=option("niceeval_fail_on_inconclusive") or config.fail_on_inconclusive,
            pricing=config.pricing,
            root=config.root,
            judge=config.judge,
            grader=option("niceeval_grader"),
            no_cache=option("niceeval_no_cache"),
            cache_only=option("niceeval_cache_only"),
            judges=self.host().judges,
        )

    def is_eval_file(self, path: Path) -> bool:
        """Whether discovery would import `path` for the config's eval paths (cheap checks first)."""
        project = self.project()
        if not project.has_config or path.suffix != ".py" or path.name.startswith("_") or path.name == "conftest.py":
            return False
        path = path.resolve()
        if not path.is_relative_to(project.root):
            return False
        try:
            self.config()
        except Exception:
            return True  # collected, so the broken config is reported as this file's collection error
        from niceeval._run.discovery import SKIP_DIRS

        for folder in project.eval_dirs:
            if path == folder:
                return True
            if path.is_relative_to(folder):
                between = path.relative_to(folder).parts[:-1]
                return not any(p in SKIP_DIRS or p.startswith((".", "_")) for p in between)
        return False

    @pytest.hookimpl
    def pytest_collect_file(self, file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
        if self.is_eval_file(file_path):
            collector: pytest.Collector = EvalFile.from_parent(parent, path=file_path)
            return collector
        return None

    def recording(self) -> SessionRecording | None:
        """The session's store recording (None when the store is off), set up on first need."""
        if self._recording is None and not self._store_off:
            from niceeval._eval.config import CONFIG_FILE
            from niceeval._run.pytest_store import RecordingOptions, SessionRecording
            from niceeval._run.storing import StoreRequest, store_location

            config, option = self.config(), self.pytest_config.getoption
            request = StoreRequest(
                flag=option("niceeval_store"),
                off=option("niceeval_no_store"),
                configured=config.store,
                root=config.root,
            )
            location = store_location(request)
            if location is None:
                self._store_off = True
                return None
            self._recording = SessionRecording(
                RecordingOptions(
                    location=location,
                    root=config.root,
                    config_file=config.root / CONFIG_FILE if self.project().has_config else None,
                    command=["pytest", *_session_args(self.pytest_config)],
                    strict=option("niceeval_strict"),
                    worker=_xdist_worker(self.pytest_config),
                )
            )
        return self._recording

    def record(self, item: pytest.Item, result: RunResult) -> None:
        """Hand a finished eval or fixture run to the store; the first one opens the recording."""
        recording = self.recording()
        if recording is None:
            return
        if not recording.attempted:
            self._open(recording, item.session.items)
        recording.record(result)

    def _open(self, recording: SessionRecording, items: list[pytest.Item]) -> None:
        agents = [self.config().agent, *(entry.spec.agent for item in items for entry in _entries(item))]
        recording.open(_planned(items), agents=agents)
        for location, message in self._load_problems:
            recording.problem(location, message)

    @pytest.hookimpl
    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed and self.is_eval_file(self.pytest_config.rootpath / report.fspath):
            self._load_problems.append((report.nodeid, str(report.longrepr)))

    @pytest.hookimpl
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int | pytest.ExitCode) -> None:
        worker = _xdist_worker(self.pytest_config)
        recording = self._recording
        if recording is None and worker is not None and _planned(session.items):
            try:  # a worker that ran no eval still reports its shard, or the suite run would never finish
                recording = self.recording()
            except Exception:
                return  # a broken config: every eval and fixture run of the session already failed naming it
        if recording is None:
            return
        if not recording.attempted:  # an xdist worker's (a single process opens on its first run)
            self._open(recording, session.items)
        note = recording.finish(interrupted=exitstatus == pytest.ExitCode.INTERRUPTED)
        if worker is not None:
            workeroutput: dict[str, Any] = self.pytest_config.workeroutput  # type: ignore[attr-defined]
            workeroutput["niceeval_store"] = note.as_data()
        else:
            self._notes.append(note)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object) -> None:
        """pytest-xdist, on the controller: a worker finished; keep what it says about the recording."""
        from niceeval._run.pytest_store import StoreNote

        data = getattr(node, "workeroutput", {}).get("niceeval_store")
        if data is not None:
            self._notes.append(StoreNote.from_data(data))

    @pytest.hookimpl
    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if not self._notes:
            return
        from niceeval._run.pytest_store import StoreNote

        for line in StoreNote.combine(self._notes).lines():
            terminalreporter.write_line(line, yellow=line.startswith("niceeval: warning"))

    @pytest.hookimpl
    def pytest_unconfigure(self, config: pytest.Config) -> None:
        if self._host is not None:
            self._host.close()
            self._host = None


def _xdist_worker(config: pytest.Config) -> XdistWorker | None:
    """This process as a pytest-xdist worker (None outside xdist, and on xdist's controller)."""
    workerinput: dict[str, Any] | None = getattr(config, "workerinput", None)
    if workerinput is None:
        return None
    from niceeval._run.pytest_store import XdistWorker

    return XdistWorker(
        testrunuid=workerinput["testrunuid"], workerid=workerinput["workerid"], count=workerinput["workercount"]
    )


def _session_args(config: pytest.Config) -> list[str]:
    """The arguments pytest was started with (on an xdist worker: the controller's, not xdist's own)."""
    workerinput: dict[str, Any] | None = getattr(config, "workerinput", None)
    return list(workerinput["mainargv"][1:] if workerinput is not None else config.invocation_params.args)


def _planned(items: list[pytest.Item]) -> list[PlannedEval]:
    """What the session runs through niceeval: every eval item, and every test that uses the fixture."""
    from niceeval._core.summary import PlannedEval

    plan: dict[str, PlannedEval] = {}
    for item in items:
        for entry in _entries(item):
            plan.setdefault(entry.id, PlannedEval(id=entry.id, file=entry.file, line=entry.spec.line, tags=entry.tags))
        if "niceeval" in getattr(item, "fixturenames", ()):
            target = _inline_target(item)
            plan.setdefault(target.eval_id, PlannedEval(id=target.eval_id, file=target.file, line=target.line))
    return list(plan.values())


def _session(config: pytest.Config) -> _Session:
    plugin = config.pluginmanager.get_plugin("niceeval-session")
    assert isinstance(plugin, _Session)
    return plugin


class EvalFile(pytest.File):
    """An eval module: imported the way `niceeval run` imports it; its evals become `EvalItem`s."""

    def collect(self) -> Iterator[pytest.Item]:
        """Import the file as `niceeval run` does; one `EvalItem` per planned eval (case and variant)."""
        from niceeval._run.discovery import discover
        from niceeval._run.plan import expand

        session = _session(self.config)
        config = session.config()
        found = discover(config.root, [str(self.path)])
        plan = expand(found.evals, root=config.root, suite_variants=config.variants)
        errors = found.errors + plan.errors
        if errors:
            raise self.CollectError("\n".join(error.describe() for error in errors))
        groups: dict[str, list[EvalEntry]] = {}
        for entry in plan.evals:  # one item per case and variant: `file.py::fn[case][variant]`
            if (key := entry.eval_group_key) is not None:
                groups.setdefault(key, []).append(entry)
                continue
            yield EvalItem.from_parent(self, name=entry.id.partition("::")[2], entry=entry)
        for key, members in groups.items():  # an eval group: one item, its members run in order in one sandbox
            yield EvalGroupItem.from_parent(self, name=key.partition("::")[2], members=members)


class EvalItem(pytest.Item):
    """One `define_eval` function, run once per pytest item."""

    def __init__(self, *, entry: EvalEntry, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.entry = entry
        for tag in entry.tags:
            self.config.addinivalue_line("markers", f"{tag}: niceeval tag")  # accepted under --strict-markers
            self.add_marker(tag)

    def runtest(self) -> None:
        """Run the eval once on the session's loop, record it, and map its outcome onto pytest's."""
        from niceeval._run.execute import execute

        session = _session(self.config)
        options = session.exec_options()
        result = session.host().run(lambda: execute(self.entry, 0, options))
        self.user_properties.append(("niceeval_outcome", result.outcome))
        session.record(self, result)
        _settle(self, result)

    def reportinfo(self) -> tuple[Path, int, str]:
        """Where pytest reports the item: the eval's file and line."""
        return self.path, self.entry.spec.line - 1, f"eval {self.entry.id}"


class EvalGroupItem(pytest.Item):
    """One `define_eval_group`: its members run once, in order, in the group's sandbox; each is recorded apart."""

    def __init__(self, *, members: list[EvalEntry], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.members = members

    def runtest(self) -> None:
        """Run one attempt of the group; fail when a member failed, naming each failed member's misses."""
        from niceeval._run.eval_groups import run_group_attempt
        from niceeval.report.assertion_table import assertion_table

        session = _session(self.config)
        options = session.exec_options()
        group = self.members[0].eval_group
        assert group is not None
        runs = session.host().run(lambda: run_group_attempt(group, self.members, 0, options, lambda _id, _index: None))
        strict = self.config.getoption("niceeval_strict")
        for run in runs:
            session.record(self, run.result)
        missed = [r.result for r in runs if r.result.outcome == "failed" or (strict and r.result.outcome == "scored")]
        if missed:
            pytest.fail("\n\n".join(f"{r.eval_id}:\n{assertion_table(r)}" for r in missed), pytrace=False)
        for run in runs:
            _settle(self, run.result)

    def reportinfo(self) -> tuple[Path, int, str]:
        """Where pytest reports the item: the group's file and line."""
        group = self.members[0].eval_group
        assert group is not None
        return self.path, group.line - 1, f"eval group {group.name}"


def _entries(item: pytest.Item) -> list[EvalEntry]:
    """The evals an item runs: one for an eval, the members for an eval group, none for other tests."""
    if isinstance(item, EvalItem):
        return [item.entry]
    if isinstance(item, EvalGroupItem):
        return item.members
    return []


def _settle(item: pytest.Item, result: RunResult) -> None:
    """Map the folded outcome onto pytest's: raise for failed (and strict scored), skip, or warn."""
    from niceeval.report.assertion_table import assertion_table

    if result.outcome == "failed" or (result.outcome == "scored" and item.config.getoption("niceeval_strict")):
        pytest.fail(assertion_table(result), pytrace=False)
    if result.outcome == "skipped":
        # reported at the eval's line, not this one (as `@pytest.mark.skip` is)
        raise pytest.skip.Exception(result.skip_reason or "skipped", _use_item_location=True)
    if result.outcome == "scored":
        misses = ", ".join(a.name for a in result.assertions if a.state == "failed")
        warnings.warn_explicit(
            NiceevalScoredWarning(f"{result.eval_id} scored: soft assertions below threshold: {misses}"),
            category=NiceevalScoredWarning,
            filename=str(item.path),
            lineno=result.line,
        )


_INLINE: pytest.StashKey[InlineRun] = pytest.StashKey()


@pytest.fixture
def niceeval(request: pytest.FixtureRequest) -> Iterator[SyncEvalContext]:
    """The eval context `t` inside an ordinary test, with the agent from the project's `niceeval.config.py`.

    After the test returns, its assertions are folded as an eval's: the test fails when the outcome does
    (a gate missed, an error), is skipped on `t.skip(...)`, and warns on a soft miss (`scored`).
    """
    from niceeval._run.fixture_run import InlineRun

    session = _session(request.config)
    node = request.node
    run = InlineRun(_inline_target(node), session.exec_options(), session.host())
    context = run.start()
    node.stash[_INLINE] = run
    try:
        yield context
    finally:
        result = run.finish()  # the result the test's call phase folded, when it got that far
        session.record(node, result)


def _inline_target(item: pytest.Item) -> InlineTarget:
    """What a test using the fixture is reported and stored as: its node id, file and line."""
    from niceeval._core.errors import relative
    from niceeval._run.fixture_run import InlineTarget

    path, line, _ = item.reportinfo()
    return InlineTarget(eval_id=item.nodeid, file=relative(str(path)), line=(line or 0) + 1)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """A test using the `niceeval` fixture: finish its run with the body's outcome and settle it as an eval's."""
    from niceeval._eval.context import RequireFailed, Skipped

    run = item.stash.get(_INLINE, None)
    outcome = None
    try:
        outcome = yield
    except (Skipped, RequireFailed):
        if run is None:
            raise
    except BaseException as exc:
        if run is not None:
            run.finish(exc)
        raise
    if run is not None:
        _settle(item, run.finish())
    return outcome
