"""The JSON and JUnit reports `niceeval run` writes, and what untrusted model output can do to them."""

from __future__ import annotations

import json

import pytest

from ._project import Project, Result, line_in, make_project

OUTCOMES = """\
from niceeval import define_eval
from niceeval.expect import includes, similarity


@define_eval(tags=["a", "b"])
async def passes(t):
    await t.send("hello")
    t.check(t.reply, includes("hello"))


@define_eval
async def scored(t):
    await t.send("hello")
    t.check(t.reply, includes("echo"))
    t.check(t.reply, similarity("echo: goodbye").at_least(0.9))


@define_eval
async def gate_fails(t):
    await t.send("hello")
    t.check(t.reply, includes("goodbye"))


@define_eval
async def errors(t):
    raise ValueError("broken eval")


@define_eval
async def skipped(t):
    t.skip("not today")
"""


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> Result:
    """One eval per outcome, run once for the tests that only read its reports."""
    project = make_project(tmp_path_factory.mktemp("outcomes"))
    project.write("evals/outcomes.py", OUTCOMES)
    return project.run()


def _line(needle: str) -> int:
    return line_in(OUTCOMES, needle)


NOTHING_SPENT = {
    **{"calls": 0, "tokens": 0, "input_tokens": 0, "output_tokens": 0, "cache_read_tokens": 0},
    **{"cost": 0.0, "cached": 0, "unpriced": []},
}


def test_json_report_has_a_schema_version_and_counts_per_outcome(outcomes: Result) -> None:
    report = outcomes.report()
    assert report["schema_version"] == 1
    assert report["exit_code"] == 1
    assert report["interrupted"] is False
    summary = dict(report["summary"])
    assert summary.pop("pass_rate")["clusters"] == 4 and 0 < summary.pop("detectable_drop") <= 1  # tests/stats
    assert summary.pop("mean_points")["note"] == "no score evals"  # no eval with points=: tests/test_points.py
    assert summary == {
        "evals": 5,
        "runs": 5,
        "runs_high": None,
        "runs_saved": None,
        "passed": 1,
        "scored": 1,
        "failed": 2,
        "skipped": 1,
        "not_counted": {"infra": 0},
        "inconclusive_assertions": 0,
        "unstable_assertions": 0,
        "errors": 0,
        "agent_spend": NOTHING_SPENT,
        "judge_spend": NOTHING_SPENT,
    }
    assert report["errors"] == []


def test_json_report_lists_every_eval_once_as_it_finished_with_id_file_line_and_pass_rate(outcomes: Result) -> None:
    evals = outcomes.report()["evals"]  # in the order they finished (docs/json-report.md)
    assert sorted(e["id"] for e in evals) == sorted(
        f"evals/outcomes.py::{name}" for name in ("passes", "scored", "gate_fails", "errors", "skipped")
    )
    assert len(evals) == 5
    (passes,) = [e for e in evals if e["id"] == "evals/outcomes.py::passes"]
    assert passes["file"] == "evals/outcomes.py"
    assert passes["line"] == _line("def passes") - 1  # the decorator's line
    assert passes["tags"] == ["a", "b"]
    assert passes["status"] == "passed"
    assert passes["pass_rate"] == 1.0
    assert passes["mean_duration_s"] >= 0
    assert {e["id"].split("::")[1]: e["pass_rate"] for e in evals} == {
        "passes": 1.0,
        "scored": 1.0,
        "gate_fails": 0.0,
        "errors": 0.0,
        "skipped": None,
    }


def test_json_report_records_each_run_with_outcome_duration_error_and_events(outcomes: Result) -> None:
    passing_run = outcomes.eval("passes")["runs"][0]
    assert passing_run["run_index"] == 0
    assert passing_run["outcome"] == "passed"
    assert isinstance(passing_run["duration_s"], float)
    assert passing_run["error"] is None
    assert [(e["type"], e["role"], e["text"]) for e in passing_run["events"]] == [
        ("message", "user", "hello"),
        ("message", "assistant", "echo: hello"),
    ]
    error = outcomes.eval("errors")["runs"][0]["error"]
    assert error["type"] == "ValueError"
    assert error["message"] == "broken eval"
    assert error["location"] == f"evals/outcomes.py:{_line('broken eval')}"
    assert outcomes.eval("skipped")["runs"][0]["skip_reason"] == "not today"


def test_json_report_records_each_assertion_with_severity_score_threshold_state_and_location(
    outcomes: Result,
) -> None:
    assertions = outcomes.eval("scored")["runs"][0]["assertions"]
    gate, soft = assertions
    gate_line = _line('includes("echo")')
    expected_gate = {
        "name": "includes('echo')",
        "severity": "gate",
        "score": 1.0,
        "threshold": 1.0,
        "state": "passed",
        "reason": "",
        "expected": "includes 'echo'",
        "actual": None,
        "location": f"evals/outcomes.py:{gate_line}",
        "optional": False,
        "cause": None,
    }
    assert {key: gate.get(key, "<missing>") for key in expected_gate} == expected_gate  # new keys may come
    assert soft["name"] == "similarity"
    assert soft["severity"] == "soft"
    assert soft["threshold"] == 0.9
    assert 0.0 < soft["score"] < 0.9
    assert soft["state"] == "failed"
    assert soft["reason"] == f"similarity {soft['score']:.2f}"
    assert soft["actual"] == "'echo: hello'"
    assert soft["location"] == f"evals/outcomes.py:{_line('similarity(')}"


def test_junit_maps_failed_to_failure_and_skipped_to_skipped(outcomes: Result) -> None:
    suite = outcomes.junit().find("testsuite")
    assert suite is not None
    counts = {key: suite.get(key) for key in ("tests", "failures", "skipped", "errors")}
    assert counts == {"tests": "5", "failures": "2", "skipped": "1", "errors": "0"}
    assert outcomes.testcase("passes").find("failure") is None
    gate = outcomes.testcase("gate_fails").find("failure")
    assert gate is not None
    assert gate.get("message") == "includes('goodbye') missed"
    gate_line = _line('includes("goodbye")')
    assert f"evals/outcomes.py:{gate_line}" in (gate.text or "")
    error = outcomes.testcase("errors").find("failure")
    assert error is not None
    assert error.get("message") == "ValueError: broken eval"
    skipped = outcomes.testcase("skipped").find("skipped")
    assert skipped is not None
    assert skipped.get("message") == "not today"
    case = outcomes.testcase("passes")
    assert (case.get("classname"), case.get("file")) == ("evals.outcomes", "evals/outcomes.py")


def test_junit_reports_scored_as_passing_with_its_soft_misses(outcomes: Result) -> None:
    case = outcomes.testcase("scored")
    assert case.find("failure") is None
    out = case.find("system-out")
    assert out is not None
    assert "[soft] similarity: score" in (out.text or "")


def test_junit_reports_scored_as_failure_under_strict(project: Project) -> None:
    project.write("evals/outcomes.py", OUTCOMES)
    result = project.run("--strict")
    failure = result.testcase("scored").find("failure")
    assert failure is not None
    assert failure.get("type") == "scored"
    assert failure.get("message") == "similarity missed"
    suite = result.junit().find("testsuite")
    assert suite is not None
    assert suite.get("failures") == "3"


def test_junit_reports_a_load_error_as_an_error_testcase(project: Project) -> None:
    project.write("evals/broken.py", "import niceeval_no_such_package_xyz\n")
    project.write("evals/ok.py", "from niceeval import define_eval\n\n@define_eval\nasync def ok(t):\n    pass\n")
    result = project.run()
    assert result.code == 2
    errors = [c for c in result.junit().iter("testcase") if c.find("error") is not None]
    assert [c.get("name") for c in errors] == ["evals/broken.py:1"]
    suite = result.junit().find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("errors")) == ("2", "1")


# Model output that tries to break XML, move the terminal's cursor and inject rich markup.
HOSTILE_TEXT = "nul\x00 esc\x1b[31mred\x1b[0m cdata]]> close</testcase> [bold red]markup[/] end"

HOSTILE = f"""\
from niceeval import define_eval
from niceeval.expect import Verdict, includes, make_assertion

HOSTILE = {HOSTILE_TEXT!r}


def hostile_agent(message):
    return HOSTILE


echoes_reason = make_assertion(name="reason is the reply", score=lambda reply: Verdict(False, reason=reply))


@define_eval(agent=hostile_agent)
async def misses_on_reply(t):
    await t.send("hi")
    t.check(t.reply, includes("never").label(t.reply))
    t.check(t.reply, echoes_reason)


@define_eval(agent=hostile_agent)
async def raises_reply(t):
    await t.send("hi")
    raise RuntimeError(t.reply)


@define_eval(agent=hostile_agent)
async def skips_with_reply(t):
    await t.send("hi")
    t.skip(t.reply)


@define_eval(name=HOSTILE)
async def named_hostile(t):
    t.check(1, includes("x"))
"""


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Result:
    project = make_project(tmp_path_factory.mktemp("hostile"))
    project.write("evals/hostile.py", HOSTILE)
    return project.run()


def test_hostile_output_keeps_the_junit_xml_parseable_and_its_text_intact(hostile: Result) -> None:
    result = hostile
    assert result.code == 1, result.output
    cases = list(result.junit().iter("testcase"))  # parses despite NUL, ESC, ]]> and </testcase>
    assert len(cases) == 4
    safe = HOSTILE_TEXT.replace("\x00", "\ufffd").replace("\x1b", "\ufffd")
    failure = result.testcase("misses_on_reply").find("failure")
    assert failure is not None
    assert f"reason: {safe}" in (failure.text or "")
    error = result.testcase("raises_reply").find("failure")
    assert error is not None
    assert error.get("message") == f"RuntimeError: {safe}"
    skipped = result.testcase("skips_with_reply").find("skipped")
    assert skipped is not None
    assert skipped.get("message") == safe
    assert [c.get("name") for c in cases if c.get("name") == safe] == [safe]


def test_hostile_output_is_kept_exactly_in_the_json_report(hostile: Result) -> None:
    result = hostile
    raw = result.json_text or ""
    assert "\x00" not in raw and "\x1b" not in raw  # escaped by JSON
    report = json.loads(raw)
    assert result.eval("raises_reply")["runs"][0]["error"]["message"] == HOSTILE_TEXT
    assert result.eval("skips_with_reply")["runs"][0]["skip_reason"] == HOSTILE_TEXT
    assert f"evals/hostile.py::{HOSTILE_TEXT}" in [e["id"] for e in report["evals"]]


def test_hostile_output_reaches_the_console_escaped_and_uninterpreted(hostile: Result) -> None:
    result = hostile
    assert "\x1b" not in result.output
    assert "\x00" not in result.output
    visible = "nul\\x00 esc\\x1b[31mred\\x1b[0m cdata]]> close</testcase> [bold red]markup[/] end"
    assert f"error RuntimeError: {visible}" in result.stdout
    assert f"skipped: {visible}" in result.stdout
    assert f"✗ {visible} [gate]" in result.stdout
    assert f"reason:   {visible}" in result.stdout
    assert f"FAIL   evals/hostile.py::{visible}" in result.stdout
