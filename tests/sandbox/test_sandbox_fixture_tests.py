"""run_fixture_tests: the hidden EVAL.py and scoring scripts, one result each, run after the agent."""

from __future__ import annotations

from pathlib import Path

import pytest
from sandbox_helpers import write_tree

from niceeval.sandbox import FixtureTestResult, LocalSandbox, run_fixture_tests

pytestmark = pytest.mark.anyio

EVAL_PASSING_AND_FAILING = """\
from pathlib import Path

def test_app_exists():
    assert Path("src/app.py").exists()

def test_greets_with_hello():
    assert "hello" in Path("src/app.py").read_text(), "greet() should say hello"
"""


@pytest.fixture
def eval_file(tmp_path: Path) -> Path:
    return write_tree(tmp_path / "evals", {"EVAL.py": EVAL_PASSING_AND_FAILING}) / "EVAL.py"


def _eval(tmp_path: Path, source: str) -> Path:
    return write_tree(tmp_path / "evals", {"EVAL.py": source}) / "EVAL.py"


async def test_each_test_gives_one_result_with_its_id(sandbox: LocalSandbox, eval_file: Path) -> None:
    results = await run_fixture_tests(sandbox, eval_file, timeout=30)
    assert [(r.test_id, r.passed) for r in results] == [
        ("EVAL.py::test_app_exists", True),
        ("EVAL.py::test_greets_with_hello", False),
    ]


async def test_passing_tests_pass_once_the_agent_did_the_work(sandbox: LocalSandbox, eval_file: Path) -> None:
    await sandbox.write_text("src/app.py", "def greet():\n    return 'hello'\n")
    results = await run_fixture_tests(sandbox, eval_file, timeout=30)
    assert all(r.passed and r.failure_text == "" for r in results)


async def test_failing_test_carries_pytests_failure_text(sandbox: LocalSandbox, eval_file: Path) -> None:
    failed = (await run_fixture_tests(sandbox, eval_file, timeout=30))[1]
    assert failed.outcome == "failed"
    assert "AssertionError: greet() should say hello" in failed.failure_text
    assert failed.failure_text.startswith("EVAL.py:7: in test_greets_with_hello")


async def test_syntax_error_gives_one_failed_collection_result(sandbox: LocalSandbox, tmp_path: Path) -> None:
    results = await run_fixture_tests(sandbox, _eval(tmp_path, "def test_x(:\n    pass\n"), timeout=30)
    assert [(r.test_id, r.outcome) for r in results] == [("EVAL.py::<collection>", "failed")]
    assert "SyntaxError: invalid syntax" in results[0].failure_text
    assert results[0].failure_text.startswith('  File "EVAL.py", line 1')
    assert "_pytest" not in results[0].failure_text


async def test_eval_file_without_tests_fails_clearly(sandbox: LocalSandbox, tmp_path: Path) -> None:
    results = await run_fixture_tests(sandbox, _eval(tmp_path, "VALUE = 1\n"), timeout=30)
    assert [(r.test_id, r.passed) for r in results] == [("EVAL.py::<collection>", False)]
    assert results[0].failure_text.startswith("no tests were found in EVAL.py")


async def test_test_ids_name_the_class(sandbox: LocalSandbox, tmp_path: Path) -> None:
    source = "class TestApp:\n    def test_ok(self):\n        pass\n"
    results = await run_fixture_tests(sandbox, _eval(tmp_path, source), timeout=30)
    assert [r.test_id for r in results] == ["EVAL.py::TestApp::test_ok"]


async def test_skipped_test_is_reported_as_skipped_with_its_reason(sandbox: LocalSandbox, tmp_path: Path) -> None:
    source = "import pytest\n\ndef test_later():\n    pytest.skip('needs a GPU')\n"
    results = await run_fixture_tests(sandbox, _eval(tmp_path, source), timeout=30)
    assert [(r.outcome, r.passed, r.failure_text) for r in results] == [("skipped", False, "needs a GPU")]


async def test_tests_can_import_the_agents_code(sandbox: LocalSandbox, tmp_path: Path) -> None:
    source = "from src.app import greet\n\ndef test_greet():\n    assert greet() == 'hi'\n"
    results = await run_fixture_tests(sandbox, _eval(tmp_path, source), timeout=30)
    assert [r.passed for r in results] == [True]


async def test_workspace_conftest_cannot_change_the_outcome(sandbox: LocalSandbox, eval_file: Path) -> None:
    await sandbox.write_text(
        "conftest.py",
        "import pytest\n\n"
        "@pytest.hookimpl(hookwrapper=True)\n"
        "def pytest_runtest_makereport(item, call):\n"
        "    outcome = yield\n"
        "    outcome.get_result().outcome = 'passed'\n",
    )
    results = await run_fixture_tests(sandbox, eval_file, timeout=30)
    assert [r.passed for r in results] == [True, False]


async def test_scoring_leaves_no_trace_in_the_workspace(sandbox: LocalSandbox, eval_file: Path) -> None:
    await run_fixture_tests(sandbox, eval_file, timeout=30)
    assert (await sandbox.diff()).is_empty()
    assert not await sandbox.exists("EVAL.py")


async def test_pytest_timeout_is_one_failed_result(sandbox: LocalSandbox, tmp_path: Path) -> None:
    source = "import time\n\ndef test_slow():\n    time.sleep(30)\n"
    results = await run_fixture_tests(sandbox, _eval(tmp_path, source), timeout=1.5)
    assert [(r.test_id, r.passed) for r in results] == [("EVAL.py::<timeout>", False)]
    assert results[0].failure_text.startswith("pytest timed out after 1.5s")


async def test_scripts_must_exit_zero(sandbox: LocalSandbox) -> None:
    results = await run_fixture_tests(sandbox, None, scripts=["test -f README.md", "echo no build >&2; exit 2"])
    assert results == [
        FixtureTestResult(test_id="script: test -f README.md", outcome="passed", duration=results[0].duration),
        FixtureTestResult(
            test_id="script: echo no build >&2; exit 2",
            outcome="failed",
            failure_text="exited with status 2\nno build",
            duration=results[1].duration,
        ),
    ]


async def test_scoring_commands_are_not_recorded_as_the_agents(sandbox: LocalSandbox, eval_file: Path) -> None:
    await run_fixture_tests(sandbox, eval_file, scripts=["true"], timeout=30)
    assert sandbox.commands == ()


async def test_missing_eval_file_is_an_error(sandbox: LocalSandbox, tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="hidden test file"):
        await run_fixture_tests(sandbox, tmp_path / "EVAL.py")


async def test_pytest_plugins_are_loaded_only_when_asked(sandbox: LocalSandbox, tmp_path: Path) -> None:
    source = "import pytest\n\n@pytest.mark.anyio\nasync def test_async():\n    assert True\n"
    eval_file = _eval(tmp_path, source)
    without = await run_fixture_tests(sandbox, eval_file, timeout=30)
    with_anyio = await run_fixture_tests(sandbox, eval_file, timeout=30, pytest_args=["-p", "anyio"])
    assert [r.passed for r in without] == [False]
    assert all(r.passed for r in with_anyio)
