"""The pytest plugin, run as a user runs it: `python -m pytest` in a sample project, in a fresh interpreter."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import pytest

from niceeval.store import Store, SuiteRunDetail

CONFIG = """\
from niceeval import define_config


def echo(message: str) -> str:
    return "echo: " + message


config = define_config(agent=echo)
"""

EVALS = """\
from niceeval import define_eval
from niceeval.expect import includes, similarity


@define_eval(tags=["fast"])
async def passes(t):
    await t.send("hello")
    t.check(t.reply, includes("echo: hello"))


@define_eval(tags=["soft"])
async def soft_miss(t):
    await t.send("hello")
    t.check(t.reply, similarity("something else entirely").at_least(0.9))


@define_eval
def gate_miss(t):
    t.send("hello")
    t.check(t.reply, includes("goodbye"))


@define_eval
async def skips(t):
    t.skip("not ready yet")
"""

FIXTURE_TESTS = """\
from niceeval.expect import includes


def test_fixture_passes(niceeval):
    niceeval.send("hi")
    niceeval.check(niceeval.reply, includes("echo: hi"))


def test_fixture_gate_miss_fails(niceeval):
    niceeval.send("hi")
    niceeval.check(niceeval.reply, includes("bye"))


def test_fixture_require_stops(niceeval):
    niceeval.send("hi")
    niceeval.require(niceeval.reply, includes("nope"))
    raise AssertionError("never reached")


def test_fixture_skip(niceeval):
    niceeval.skip("later")
"""

INNER_EVALS = """\
from niceeval import define_eval


def test_defines_an_eval_inside():
    @define_eval
    async def inner(t):
        raise AssertionError("an eval defined inside a test must not be collected")

    assert inner.name == "inner"
"""

HELPER_WITH_EVAL = """\
from niceeval import define_eval


@define_eval
async def helper_eval(t):
    raise AssertionError("a helper outside the eval paths must not be collected")
"""


@dataclass(frozen=True)
class Outcome:
    code: int
    output: str
    cases: dict[str, str]
    """Test id (`file::name`) -> `passed` | `failed` | `skipped`."""
    failures: dict[str, str]
    """Test id -> failure text."""


def _cases(report: Path) -> tuple[dict[str, str], dict[str, str]]:
    if not report.exists():
        return {}, {}
    cases, failures = {}, {}
    for case in ET.parse(report).getroot().iter("testcase"):
        path = case.get("classname", "").replace(".", "/") + ".py"
        test_id = f"{path}::{case.get('name')}"
        failure = case.find("failure")
        skipped = case.find("skipped")
        cases[test_id] = "failed" if failure is not None else "skipped" if skipped is not None else "passed"
        if failure is not None:
            failures[test_id] = failure.get("message", "") + "\n" + (failure.text or "")
    return cases, failures


def _pytest(root: Path, *args: str) -> Outcome:
    report = root / "junit.xml"
    report.unlink(missing_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "NICEEVAL"))}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:randomly", f"--junitxml={report}", *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    cases, failures = _cases(report)
    return Outcome(code=proc.returncode, output=proc.stdout + proc.stderr, cases=cases, failures=failures)


def _write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    _write(tmp_path, "niceeval.config.py", CONFIG)
    _write(tmp_path, "evals/sample.py", EVALS)
    _write(tmp_path, "evals/_helpers.py", HELPER_WITH_EVAL)
    _write(tmp_path, "evals/fixtures/ws/thing.py", HELPER_WITH_EVAL)
    _write(tmp_path, "tests/test_fixture.py", FIXTURE_TESTS)
    _write(tmp_path, "tests/test_inner.py", INNER_EVALS)
    _write(tmp_path, "tests/helpers.py", HELPER_WITH_EVAL)
    return tmp_path


def test_evals_are_items_with_outcomes_mapped(project: Path) -> None:
    result = _pytest(project, "evals")
    assert result.cases == {
        "evals/sample.py::passes": "passed",
        "evals/sample.py::soft_miss": "passed",
        "evals/sample.py::gate_miss": "failed",
        "evals/sample.py::skips": "skipped",
    }, result.output
    assert result.code == 1


def test_failed_eval_shows_the_assertion_table(project: Path) -> None:
    result = _pytest(project, "evals")
    text = result.failures["evals/sample.py::gate_miss"]
    assert "✗ gate 0.00/1.00  includes('goodbye')  evals/sample.py:20" in text
    assert "actual:   'echo: hello'" in text


def test_scored_eval_passes_with_a_warning(project: Path) -> None:
    result = _pytest(project, "evals", "-k", "soft_miss")
    assert result.code == 0
    assert "NiceevalScoredWarning: evals/sample.py::soft_miss scored" in result.output


def test_scored_eval_fails_under_niceeval_strict(project: Path) -> None:
    result = _pytest(project, "evals", "--niceeval-strict")
    assert result.cases["evals/sample.py::soft_miss"] == "failed"
    assert "evals/sample.py::soft_miss: scored" in result.failures["evals/sample.py::soft_miss"]


def test_skip_is_reported_at_the_eval_line(project: Path) -> None:
    result = _pytest(project, "evals", "-rs")
    assert "SKIPPED [1] evals/sample.py:23: not ready yet" in result.output


def test_k_selects_evals_by_name(project: Path) -> None:
    result = _pytest(project, "evals", "-k", "passes or gate")
    assert set(result.cases) == {"evals/sample.py::passes", "evals/sample.py::gate_miss"}


def test_tags_are_markers_even_with_strict_markers(project: Path) -> None:
    result = _pytest(project, "evals", "-m", "soft", "--strict-markers")
    assert set(result.cases) == {"evals/sample.py::soft_miss"}, result.output
    assert result.code == 0


def test_x_stops_at_the_first_failure(project: Path) -> None:
    result = _pytest(project, "evals", "-x", "-p", "no:warnings")
    assert "stopping after 1 failures" in result.output
    assert "evals/sample.py::skips" not in result.cases


def test_last_failed_reruns_only_failures(project: Path) -> None:
    _pytest(project, "evals")
    result = _pytest(project, "evals", "--lf")
    assert result.cases == {"evals/sample.py::gate_miss": "failed"}, result.output


@pytest.mark.slow
def test_xdist_two_workers_give_the_same_outcomes(project: Path) -> None:
    serial = _pytest(project, "evals", "tests")
    parallel = _pytest(project, "evals", "tests", "-n", "2")
    assert "2 workers" in parallel.output
    assert parallel.cases == serial.cases
    assert len(parallel.cases) == 9


def test_fixture_gives_t_and_folds_the_test(project: Path) -> None:
    result = _pytest(project, "tests/test_fixture.py")
    assert result.cases == {
        "tests/test_fixture.py::test_fixture_passes": "passed",
        "tests/test_fixture.py::test_fixture_gate_miss_fails": "failed",
        "tests/test_fixture.py::test_fixture_require_stops": "failed",
        "tests/test_fixture.py::test_fixture_skip": "skipped",
    }, result.output
    assert "includes('bye')" in result.failures["tests/test_fixture.py::test_fixture_gate_miss_fails"]
    require_failure = result.failures["tests/test_fixture.py::test_fixture_require_stops"]
    assert "includes('nope')" in require_failure and "never reached" not in require_failure


def test_only_files_under_the_config_eval_paths_are_collected(project: Path) -> None:
    result = _pytest(project)
    assert "evals/_helpers.py::helper_eval" not in result.cases
    assert not any("helper_eval" in case or "inner" in case.split("::")[1] for case in result.cases), result.cases
    assert result.cases["tests/test_inner.py::test_defines_an_eval_inside"] == "passed"
    assert len(result.cases) == 9


def test_nothing_is_collected_without_a_config_file(project: Path) -> None:
    (project / "niceeval.config.py").unlink()
    result = _pytest(project, "evals")
    assert result.cases == {}
    assert result.code == 5  # pytest: no tests collected


def test_broken_config_is_a_collection_error_naming_it(project: Path) -> None:
    _write(project, "niceeval.config.py", "from niceeval import define_config\nconfig = define_config(concurency=2)\n")
    result = _pytest(project, "evals")
    assert result.code == 2
    assert "niceeval.config.py" in result.output and "did you mean 'concurrency'" in result.output


def test_p_no_niceeval_turns_the_plugin_off(project: Path) -> None:
    result = _pytest(project, "evals", "-p", "no:niceeval")
    assert result.cases == {}


def test_cases_are_one_item_each(project: Path) -> None:
    _write(
        project,
        "evals/cases.py",
        """\
        from niceeval import define_eval
        from niceeval.expect import includes


        @define_eval(cases=[{"id": "hi", "input": "hi"}, {"id": "yo", "input": "yo", "tags": ["slang"]}])
        async def echoes(t):
            await t.send(t.case["input"])
            t.check(t.reply, includes("echo: hi"))
        """,
    )
    result = _pytest(project, "evals/cases.py")
    assert result.cases == {"evals/cases.py::echoes[hi]": "passed", "evals/cases.py::echoes[yo]": "failed"}
    assert set(_pytest(project, "evals/cases.py", "-m", "slang").cases) == {"evals/cases.py::echoes[yo]"}


# The results store: a session that runs evals is one suite run.

EVAL_OUTCOMES = {
    "evals/sample.py::passes": "passed",
    "evals/sample.py::soft_miss": "scored",
    "evals/sample.py::gate_miss": "failed",
    "evals/sample.py::skips": "skipped",
}
FIXTURE_OUTCOMES = {
    "tests/test_fixture.py::test_fixture_passes": "passed",
    "tests/test_fixture.py::test_fixture_gate_miss_fails": "failed",
    "tests/test_fixture.py::test_fixture_require_stops": "failed",
    "tests/test_fixture.py::test_fixture_skip": "skipped",
}


def _stored_runs(url: str) -> list[SuiteRunDetail]:
    with Store.open(url) as store:
        return [store.run(info.id) for info in store.runs()]


def _niceeval(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NICEEVAL")}
    command = [sys.executable, "-m", "niceeval.cli", *args]
    return subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, timeout=60, check=False)


def test_a_session_is_one_suite_run_of_its_evals_and_fixture_runs(project: Path, store_url: str) -> None:
    result = _pytest(project, "evals", "tests/test_fixture.py", f"--niceeval-store={store_url}")
    [detail] = _stored_runs(store_url)
    assert {r.eval_id: r.outcome for r in detail.eval_runs} == EVAL_OUTCOMES | FIXTURE_OUTCOMES
    run = detail.run
    assert (run.kind, run.status, run.exit_code, run.shard_count) == ("pytest", "finished", 1, None)
    assert (run.passed, run.scored, run.failed, run.skipped) == (2, 1, 3, 2)
    assert run.command[:3] == ["pytest", "-p", "no:randomly"] and run.command[-1] == f"--niceeval-store={store_url}"
    assert f"niceeval: stored as run {run.id} in " in result.output


def test_the_default_store_is_read_back_by_niceeval_runs_and_show(project: Path) -> None:
    _pytest(project, "evals")
    listing = _niceeval(project, "runs")
    assert listing.stdout.splitlines()[1].endswith("finished, pytest"), listing.stdout + listing.stderr
    shown = _niceeval(project, "show", "latest")
    assert "FAIL   evals/sample.py::gate_miss" in shown.stdout, shown.stdout + shown.stderr
    assert "1 passed, 1 scored, 1 failed, 1 skipped (4 evals, 4 runs)" in shown.stdout


def test_a_test_asking_for_the_fixture_by_name_is_planned_and_recorded(project: Path) -> None:
    _write(
        project,
        "tests/test_by_name.py",
        """\
        from niceeval.expect import includes


        def test_by_name(request):
            t = request.getfixturevalue("niceeval")
            t.send("hi")
            t.check(t.reply, includes("echo: hi"))
        """,
    )
    _pytest(project, "tests/test_by_name.py")
    shown = _niceeval(project, "show", "latest")
    assert "PASS   tests/test_by_name.py::test_by_name" in shown.stdout, shown.stdout + shown.stderr
    assert "1 passed, 0 scored, 0 failed, 0 skipped (1 eval, 1 run)" in shown.stdout


@pytest.mark.parametrize("off", ["--niceeval-no-store", "store=False"])
def test_the_store_turned_off_records_nothing(project: Path, off: str) -> None:
    if off == "store=False":
        _write(
            project,
            "niceeval.config.py",
            CONFIG.replace("define_config(agent=echo)", "define_config(agent=echo, store=False)"),
        )
    result = _pytest(project, "evals", "tests/test_fixture.py", *([off] if off.startswith("--") else []))
    assert result.cases["evals/sample.py::passes"] == "passed"
    assert not (project / ".niceeval" / "results.db").exists()
    assert "niceeval: stored" not in result.output


def test_a_session_without_evals_opens_no_store_and_imports_no_database_code(project: Path) -> None:
    _write(
        project,
        "conftest.py",
        """\
        import sys
        from pathlib import Path


        def pytest_sessionfinish(session):
            Path("sqlalchemy-imported").write_text(str("sqlalchemy" in sys.modules))
        """,
    )
    result = _pytest(project, "tests/test_inner.py")
    assert result.cases == {"tests/test_inner.py::test_defines_an_eval_inside": "passed"}
    assert not (project / ".niceeval").exists()
    assert (project / "sqlalchemy-imported").read_text() == "False"


@pytest.mark.slow
def test_xdist_workers_write_one_suite_run_holding_every_item_once(project: Path, store_url: str) -> None:
    result = _pytest(project, "evals", "tests", "-n", "2", f"--niceeval-store={store_url}")
    assert "2 workers" in result.output
    [detail] = _stored_runs(store_url)
    stored = [(r.eval_id, r.run_index) for r in detail.eval_runs]
    assert sorted(stored) == sorted((eval_id, 0) for eval_id in EVAL_OUTCOMES | FIXTURE_OUTCOMES)
    assert {r.eval_id: r.outcome for r in detail.eval_runs} == EVAL_OUTCOMES | FIXTURE_OUTCOMES
    run = detail.run
    assert (run.kind, run.status, run.shard_count, run.shards_done, run.exit_code) == ("pytest", "finished", 2, 2, 1)
    assert result.output.count("niceeval: stored as run") == 1, result.output


def test_an_unreachable_store_warns_once_and_the_tests_run_unrecorded(project: Path) -> None:
    url = "postgresql://evals:hunter2hunter2@127.0.0.1:1/evals"
    result = _pytest(project, "evals", f"--niceeval-store={url}")
    assert result.cases["evals/sample.py::passes"] == "passed" and result.code == 1
    warning = "niceeval: warning: cannot open the results store postgresql+psycopg://evals:***@127.0.0.1:1/evals"
    assert result.output.count(warning) == 1, result.output
    assert "This pytest session is not recorded; the tests ran as usual." in result.output
    assert "hunter2hunter2" not in result.output.replace(f"--niceeval-store={url}", "")


def test_a_store_failing_mid_session_warns_how_many_runs_were_lost(project: Path) -> None:
    _write(
        project,
        "conftest.py",
        """\
        from niceeval.store import _statements


        def _gone(session, suite_run_id, runs):
            raise ConnectionError("the database went away")


        _statements.insert_runs = _gone
        """,
    )
    result = _pytest(project, "evals")
    assert result.cases["evals/sample.py::passes"] == "passed"
    assert "niceeval: warning: 4 of 4 eval runs of this pytest session were not stored" in result.output
    assert "(ConnectionError: the database went away)" in result.output


PRICED_CONFIG = """\
from niceeval import define_config
from niceeval.agents import openai_agent

config = define_config(agent=openai_agent("openai/gpt-5.1"))
"""

PRICED_EVAL = """\
from pathlib import Path

from niceeval import define_eval


@define_eval
async def priced(t):
    await t.send("hello")
    Path("cost.txt").write_text(repr(t.usage.cost))
"""

# What the session imported of genai-prices, noted as pytest ends.
IMPORTS_CONFTEST = """\
import sys
from pathlib import Path


def pytest_unconfigure(config):
    imported = sorted(name for name in sys.modules if name.split(".")[0] == "genai_prices")
    Path("genai_prices_modules.txt").write_text(" ".join(imported))
"""


def test_a_session_keeps_prices_in_the_projects_memo_like_niceeval_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from niceeval.providers._pricing import find_price
    from niceeval.testing import LLMServer, Reply, TokenUsage

    _write(tmp_path, "niceeval.config.py", PRICED_CONFIG)
    _write(tmp_path, "evals/priced.py", PRICED_EVAL)
    _write(tmp_path, "conftest.py", IMPORTS_CONFTEST)
    price = find_price("openai/gpt-5.1")
    assert price is not None
    expected = (1000 * price.input_per_mtok + 200 * price.output_per_mtok) / 1e6
    with LLMServer(lambda request: Reply(text="hi", usage=TokenUsage(input_tokens=1000, output_tokens=200))) as server:
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        first = _pytest(tmp_path, "evals", "--niceeval-no-store")
        assert first.cases == {"evals/priced.py::priced": "passed"}, first.output
        assert "genai_prices.data" in (tmp_path / "genai_prices_modules.txt").read_text().split()
        assert float((tmp_path / "cost.txt").read_text()) == pytest.approx(expected)
        assert "openai/gpt-5.1" in (tmp_path / ".niceeval" / "prices.json").read_text()
        second = _pytest(tmp_path, "evals", "--niceeval-no-store")
    assert second.cases == {"evals/priced.py::priced": "passed"}, second.output
    assert (tmp_path / "genai_prices_modules.txt").read_text() == ""  # priced from the memo
    assert float((tmp_path / "cost.txt").read_text()) == pytest.approx(expected)
