"""`niceeval run` records every suite run in the results store; `runs` and `show` read it back."""

from __future__ import annotations

import re

import pytest

from niceeval.store import Store

from ._project import Project

EVALS = """\
from niceeval import define_eval
from niceeval.expect import includes


@define_eval
async def greets(t):
    await t.send("hello")
    t.check(t.reply, includes("hello"))


@define_eval
async def says_goodbye(t):
    await t.send("hello")
    t.check(t.reply, includes("goodbye"))
"""


@pytest.fixture
def evals(project: Project) -> Project:
    project.write("evals/talk.py", EVALS)
    return project


def test_a_run_is_stored_under_the_run_id_of_its_json_report(evals: Project, store_url: str) -> None:
    result = evals.run("--store", store_url)
    run_id = result.report()["run_id"]
    with Store.open(store_url) as store:
        detail = store.run(run_id)
    assert (detail.run.status, detail.run.passed, detail.run.failed, detail.run.exit_code) == ("finished", 1, 1, 1)
    assert [(r.eval_id, r.outcome) for r in detail.eval_runs] == [
        ("evals/talk.py::greets", "passed"),
        ("evals/talk.py::says_goodbye", "failed"),
    ]
    assert f"stored as run {run_id}" in result.stdout


def test_the_default_store_is_a_sqlite_file_in_the_project(evals: Project) -> None:
    result = evals.run()
    assert (evals.root / ".niceeval" / "results.db").is_file()
    assert evals.cli("runs").stdout.splitlines()[1].startswith(result.report()["run_id"])


def test_no_store_records_nothing_and_the_report_has_no_run_id(evals: Project) -> None:
    result = evals.run("--no-store")
    assert result.report()["run_id"] is None
    assert not (evals.root / ".niceeval" / "results.db").exists()


def test_the_store_url_can_come_from_the_environment(evals: Project, store_url: str) -> None:
    run_id = evals.run(env={"NICEEVAL_STORE": store_url}).report()["run_id"]
    with Store.open(store_url) as store:
        assert store.resolve(run_id) == run_id


def test_the_store_can_come_from_the_config(evals: Project) -> None:
    evals.write(
        "niceeval.config.py",
        """\
        from niceeval import define_config

        config = define_config(agent=lambda m: "echo: " + m, store="kept/results.db")
        """,
    )
    run_id = evals.run().report()["run_id"]
    with Store.open(str(evals.root / "kept" / "results.db")) as store:
        assert store.resolve(run_id) == run_id


def test_store_false_in_the_config_turns_it_off(evals: Project) -> None:
    evals.write(
        "niceeval.config.py",
        """\
        from niceeval import define_config

        config = define_config(agent=lambda m: "echo: " + m, store=False)
        """,
    )
    assert evals.run().report()["run_id"] is None


def test_runs_lists_suite_runs_latest_first_with_their_counts(evals: Project, store_url: str) -> None:
    first = evals.run("--store", store_url).report()["run_id"]
    second = evals.run("--store", store_url, "-k", "greets").report()["run_id"]
    listing = evals.cli("runs", "--store", store_url)
    assert listing.code == 0
    lines = listing.stdout.splitlines()
    assert lines[1].startswith(second) and "1/0/0/0" in lines[1] and "100%" in lines[1]
    assert lines[2].startswith(first) and "1/0/1/0" in lines[2] and "50%" in lines[2]


def test_show_rebuilds_the_console_report(evals: Project, store_url: str) -> None:
    run_id = evals.run("--store", store_url).report()["run_id"]
    shown = evals.cli("show", run_id[:6], "--store", store_url)
    assert shown.code == 0
    assert "PASS   evals/talk.py::greets" in shown.stdout
    assert "FAIL   evals/talk.py::says_goodbye" in shown.stdout
    assert "✗ includes('goodbye') [gate] score 0.00 < 1.00" in shown.stdout
    assert "1 passed, 0 scored, 1 failed, 0 skipped (2 evals, 2 runs)" in shown.stdout


def test_show_of_one_eval_prints_its_assertions_and_events(evals: Project, store_url: str) -> None:
    evals.run("--store", store_url)
    shown = evals.cli("show", "latest", "evals/talk.py::says_goodbye", "--store", store_url)
    assert "greets" not in shown.stdout
    assert "failed       includes('goodbye') [gate] score 0.00 / 1.00" in shown.stdout
    event = r"#1 message: \{'role': 'assistant', 'text': 'echo: hello', 'latency': \d+\.\d{1,3}\}"
    assert re.search(event, shown.stdout)


def test_show_of_an_unknown_run_exits_2_saying_how_to_list_runs(evals: Project, store_url: str) -> None:
    evals.run("--store", store_url)
    shown = evals.cli("show", "0000ffff", "--store", store_url)
    assert shown.code == 2
    assert "no suite run '0000ffff'" in shown.stderr and "niceeval runs" in shown.stderr


def test_runs_without_a_store_yet_says_run_creates_it(evals: Project) -> None:
    listing = evals.cli("runs")
    assert listing.code == 2
    assert "no results store at" in listing.stderr and "`niceeval run` creates it" in listing.stderr


def test_an_unreachable_store_exits_2_before_running_with_the_password_masked(evals: Project) -> None:
    result = evals.run("--store", "postgresql://ci:hunter2@127.0.0.1:1/evals")
    assert result.code == 2
    assert "hunter2" not in result.output
    assert "ci:***@127.0.0.1:1/evals" in result.stderr
    assert result.json_text is None  # nothing ran: no money spent on a run that could not be kept


def test_a_corrupted_store_file_exits_2_before_running(evals: Project) -> None:
    broken = evals.root / ".niceeval" / "results.db"
    broken.parent.mkdir()
    broken.write_bytes(b"\x00garbage, not SQLite\x00" * 300)
    result = evals.run()
    assert result.code == 2
    assert "results.db is not a SQLite database" in result.stderr and "--no-store" in result.stderr
    assert result.json_text is None
    assert broken.read_bytes().startswith(b"\x00garbage")


def test_a_store_from_a_newer_niceeval_exits_2_naming_its_version(evals: Project, store_url: str) -> None:
    from sqlalchemy import create_engine, text

    evals.run("--store", store_url)
    engine = create_engine(store_url)
    with engine.begin() as conn:
        conn.execute(text("update alembic_version set version_num = '0042'"))
        conn.execute(text("update store_info set value = '3.0.0' where key = 'niceeval_version'"))
    engine.dispose()
    result = evals.run("--store", store_url)
    assert result.code == 2
    assert "written by niceeval 3.0.0 (schema 0042)" in result.stderr and "Upgrade niceeval" in result.stderr
