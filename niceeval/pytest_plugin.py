"""The pytest plugin (entry point `pytest11`, on when niceeval is installed; `-p no:niceeval` turns it off).

- `pytest evals/` collects `define_eval` functions as test items: ids `evals/file.py::name`, tags as markers, so
  `-k`, `-m`, `-x`, `--lf` and pytest-xdist work as for any test. Only files under the eval paths of the project's
  `niceeval.config.py` are collected, so a project's ordinary tests (even ones that define evals inside test
  functions) are left alone, and nothing is collected where there is no config file.
- The `niceeval` fixture gives an ordinary test the context `t`; the test fails when its folded outcome fails.

Outcomes: `passed` passes; `failed` fails with the assertion table as the failure text; `skipped` skips; `scored`
passes with a `NiceevalScoredWarning` and fails under `--niceeval-strict`.

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
    from niceeval._eval.config import Config
    from niceeval._eval.context import SyncEvalContext
    from niceeval._run.discovery import EvalEntry
    from niceeval._run.execute import ExecOptions
    from niceeval._run.inline import InlineRun
    from niceeval._run.loop_host import LoopHost

_CONFIG_FILE = "niceeval.config.py"


class NiceevalScoredWarning(UserWarning):
    """An eval passed with a soft miss (`scored`); `--niceeval-strict` makes it fail instead."""


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("niceeval", "niceeval evals")
    group.addoption("--niceeval-strict", action="store_true", help="soft misses (`scored`) fail too")
    group.addoption("--niceeval-grader", metavar="MODEL", help="judge model for every judge call")
    group.addoption("--niceeval-no-cache", action="store_true", help="always call judge models (no verdict cache)")
    group.addoption("--niceeval-cache-only", action="store_true", help="replay judge verdicts from the cache only")
    group.addoption(
        "--niceeval-fail-on-inconclusive", action="store_true", help="inconclusive assertions count as misses"
    )


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("niceeval_no_cache") and config.getoption("niceeval_cache_only"):
        raise pytest.UsageError("--niceeval-no-cache and --niceeval-cache-only exclude each other; pass one.")
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
    """Per pytest session: the project, and one event loop shared by every eval and fixture run."""

    def __init__(self, config: pytest.Config) -> None:
        self.pytest_config = config
        self._project: _Project | None = None
        self._host: LoopHost | None = None

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
        from niceeval._run.discovery import _SKIP_DIRS

        for folder in project.eval_dirs:
            if path == folder:
                return True
            if path.is_relative_to(folder):
                between = path.relative_to(folder).parts[:-1]
                return not any(p in _SKIP_DIRS or p.startswith((".", "_")) for p in between)
        return False

    @pytest.hookimpl
    def pytest_collect_file(self, file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
        if self.is_eval_file(file_path):
            collector: pytest.Collector = EvalFile.from_parent(parent, path=file_path)
            return collector
        return None

    @pytest.hookimpl
    def pytest_unconfigure(self, config: pytest.Config) -> None:
        if self._host is not None:
            self._host.close()
            self._host = None


def _session(config: pytest.Config) -> _Session:
    plugin = config.pluginmanager.get_plugin("niceeval-session")
    assert isinstance(plugin, _Session)
    return plugin


class EvalFile(pytest.File):
    """An eval module: imported the way `niceeval run` imports it; its evals become `EvalItem`s."""

    def collect(self) -> Iterator[pytest.Item]:
        from niceeval._run.discovery import discover
        from niceeval._run.plan import expand

        session = _session(self.config)
        config = session.config()
        found = discover(config.root, [str(self.path)])
        plan = expand(found.evals, root=config.root, suite_variants=config.variants)
        errors = found.errors + plan.errors
        if errors:
            raise self.CollectError("\n".join(error.describe() for error in errors))
        for entry in plan.evals:  # one item per case and variant: `file.py::fn[case][variant]`
            yield EvalItem.from_parent(self, name=entry.id.partition("::")[2], entry=entry)


class EvalItem(pytest.Item):
    """One `define_eval` function, run once per pytest item."""

    def __init__(self, *, entry: EvalEntry, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.entry = entry
        for tag in entry.tags:
            self.config.addinivalue_line("markers", f"{tag}: niceeval tag")  # accepted under --strict-markers
            self.add_marker(tag)

    def runtest(self) -> None:
        from niceeval._run.execute import execute

        session = _session(self.config)
        options = session.exec_options()
        result = session.host().run(lambda: execute(self.entry, 0, options))
        self.user_properties.append(("niceeval_outcome", result.outcome))
        _settle(self, result)

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, self.entry.spec.line - 1, f"eval {self.entry.id}"


def _settle(item: pytest.Item, result: RunResult) -> None:
    """Map the folded outcome onto pytest's: raise for failed (and strict scored), skip, or warn."""
    from niceeval.report.text import assertion_table

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
    from niceeval._run.inline import InlineRun, InlineTarget

    session = _session(request.config)
    node = request.node
    path, line, _ = node.reportinfo()
    target = InlineTarget(eval_id=node.nodeid, file=str(path), line=(line or 0) + 1)
    run = InlineRun(target, session.exec_options(), session.host())
    context = run.start()
    node.stash[_INLINE] = run
    try:
        yield context
    finally:
        run.finish()  # a no-op when the test's call phase already finished it


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
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
