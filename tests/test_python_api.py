"""`niceeval.run()` / `niceeval.run_async()`: the suite `niceeval run` runs, from Python, as a `SuiteResult`."""

from __future__ import annotations

import asyncio
from pathlib import Path

import anyio
import pytest

import niceeval
from niceeval import SuiteResult, UsageError
from niceeval.store import Store

CONFIG = """\
from niceeval import define_config

config = define_config(agent=lambda message: "echo: " + message)
"""

EVALS = """\
from niceeval import define_eval
from niceeval.expect import includes


@define_eval(tags=["smoke"])
async def greets(t):
    await t.send("hi")
    t.check(t.reply, includes("hi"))


@define_eval
async def refunds(t):
    await t.send("refund")
    t.check(t.reply, includes("approved"))
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "niceeval.config.py").write_text(CONFIG)
    (tmp_path / "evals").mkdir()
    (tmp_path / "evals" / "talk.py").write_text(EVALS)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_run_returns_the_summary_and_every_run(project: Path) -> None:
    result = niceeval.run("evals", runs=2, store=False)
    assert isinstance(result, SuiteResult)
    assert result.exit_code == 1 and not result.passed
    assert result.run_id is None
    assert [(r.eval_id, r.run_index, r.outcome) for r in result.runs] == [
        ("evals/talk.py::greets", 0, "passed"),
        ("evals/talk.py::greets", 1, "passed"),
        ("evals/talk.py::refunds", 0, "failed"),
        ("evals/talk.py::refunds", 1, "failed"),
    ]
    assert result.summary.eval_counts() == {"passed": 1, "scored": 0, "failed": 1, "skipped": 0}
    assert [r.run_index for r in result.runs_of("evals/talk.py::refunds")] == [0, 1]
    assert result.runs_of("evals/talk.py::refunds")[0].assertions[0].actual == "'echo: refund'"


def test_options_are_the_run_commands_flags_by_name(project: Path) -> None:
    result = niceeval.run(tag=["smoke"], store=False, strict=True, timeout=30)
    assert [r.eval_id for r in result.runs] == ["evals/talk.py::greets"]
    assert result.passed
    assert [r.eval_id for r in niceeval.run(keyword="refunds", store=False).runs] == ["evals/talk.py::refunds"]


def test_a_stored_run_has_its_id_and_is_in_the_store(project: Path) -> None:
    result = niceeval.run(store="results.db")
    assert result.run_id is not None
    with Store.open(str(project / "results.db")) as store:
        assert store.run(result.run_id).run.runs_done == 2
    default = niceeval.run(store=True, keyword="greets")
    with Store.open(str(project / ".niceeval" / "results.db")) as store:
        assert store.runs()[0].id == default.run_id


def test_run_from_inside_a_running_asyncio_loop(project: Path) -> None:
    async def notebook_cell() -> SuiteResult:
        return niceeval.run(store=False)  # a notebook calls it from its loop's task, without await

    result = asyncio.run(notebook_cell())
    assert [r.outcome for r in result.runs] == ["passed", "failed"]


def test_run_async_awaits_on_the_callers_anyio_task(project: Path) -> None:
    async def main() -> SuiteResult:
        async with anyio.create_task_group() as tg:
            box: list[SuiteResult] = []

            async def one() -> None:
                box.append(await niceeval.run_async(store=False, keyword="greets"))

            tg.start_soon(one)
        return box[0]

    result = anyio.run(main)
    assert result.passed and [r.eval_id for r in result.runs] == ["evals/talk.py::greets"]


def test_an_unknown_option_is_a_type_error_naming_the_valid_ones(project: Path) -> None:
    with pytest.raises(TypeError, match=r"unknown option\(s\) retries\. .*concurrency, .*exitfirst, .*tag"):
        niceeval.run(retries=3)


def test_dry_run_is_refused_with_what_to_do_instead(project: Path) -> None:
    with pytest.raises(TypeError, match=r"niceeval run --dry-run"):
        niceeval.run(dry_run=True)


def test_a_value_the_flag_refuses_raises_with_the_flags_message(project: Path) -> None:
    with pytest.raises(UsageError, match="--concurrency must be at least 1, got 0"):
        niceeval.run(concurrency=0, store=False)
    with pytest.raises(UsageError, match="strict= takes True or False"):
        niceeval.run(strict="yes", store=False)


def test_a_refused_run_raises_instead_of_exiting(project: Path) -> None:
    with pytest.raises(UsageError, match="no eval in evals matches -k 'nothing_matches'"):
        niceeval.run(keyword="nothing_matches", store=False)


def test_the_table_renders_in_a_terminal_and_in_jupyter_escaped(project: Path) -> None:
    (project / "evals" / "broken.py").write_text("raise RuntimeError('<script>alert(1)</script>')\n")
    result = niceeval.run(store=False)
    assert result.exit_code == 2
    text = str(result)
    assert "evals/talk.py::greets" in text and "passed" in text and "100%" in text
    assert "2 evals (1 passed, 1 failed), 2 runs" in text
    page = result._repr_html_()
    assert "<td>evals/talk.py::refunds</td><td>failed</td><td>0</td><td>1</td><td>0%</td>" in page
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert repr(result) == "SuiteResult(run_id=None, exit_code=2)"


def test_values_are_written_as_on_the_command_line(project: Path) -> None:
    report = project / "report.json"
    result = niceeval.run(runs=2, min_pass_at_k=(2, 0.5), json=report, store=False)
    assert result.summary.min_pass_at_k == (2, 0.5)
    assert result.summary.eval_counts()["failed"] == 1
    assert report.is_file()
    with pytest.raises(UsageError, match="--min-pass-at-k 3:... needs --runs of at least that"):
        niceeval.run(runs=2, min_pass_at_k="3:0.5", store=False)


def test_a_flag_with_an_optional_value_takes_true_for_the_flag_alone(project: Path) -> None:
    from niceeval.cli._api import run_arguments

    assert run_arguments(None, {"keep_sandbox": True}).keep_sandbox == "all"
    assert run_arguments(None, {"keep_sandbox": "failed"}).keep_sandbox == "failed"
    assert run_arguments(None, {"resume": False}).resume is None
    assert run_arguments(["evals/talk.py", project / "evals"], {}).paths == ["evals/talk.py", str(project / "evals")]
