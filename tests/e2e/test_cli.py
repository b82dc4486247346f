"""`niceeval run` end to end: exit codes, repeated runs, selection, concurrency, timeouts and errors in evals."""

from __future__ import annotations

import pytest

from ._project import Project

MIXED = """\
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
async def gate_miss(t):
    await t.send("hello")
    t.check(t.reply, includes("goodbye"))


@define_eval
async def skips(t):
    t.skip("not ready yet")
"""


def _write_mixed(project: Project) -> None:
    project.write("evals/mixed.py", MIXED)


def test_all_passing_evals_exit_0(project: Project) -> None:
    project.write(
        "evals/ok.py",
        """\
        from niceeval import define_eval
        from niceeval.expect import equals, includes

        @define_eval
        async def first(t):
            await t.send("one")
            t.check(t.reply, includes("one"))

        @define_eval
        def second(t):
            t.send("two")
            t.check(t.reply, equals("echo: two"))
        """,
    )
    result = project.run()
    assert result.code == 0, result.output
    assert "PASS   evals/ok.py::first" in result.stdout
    assert "PASS   evals/ok.py::second" in result.stdout
    assert "2 passed, 0 scored, 0 failed, 0 skipped" in result.stdout


def test_scored_eval_exits_0(project: Project) -> None:
    _write_mixed(project)
    result = project.run("evals/mixed.py::soft_miss")
    assert result.code == 0, result.output
    assert "SCORED evals/mixed.py::soft_miss" in result.stdout
    assert "similarity [soft] score" in result.stdout


def test_scored_eval_exits_1_under_strict(project: Project) -> None:
    _write_mixed(project)
    result = project.run("evals/mixed.py::soft_miss", "--strict")
    assert result.code == 1, result.output
    assert result.eval("soft_miss")["status"] == "failed"
    assert result.report()["exit_code"] == 1


def test_failed_gate_exits_1_and_explains_the_miss(project: Project) -> None:
    _write_mixed(project)
    result = project.run("evals/mixed.py::gate_miss")
    assert result.code == 1, result.output
    line = project.line_of("evals/mixed.py", 'includes("goodbye")')
    assert "FAIL   evals/mixed.py::gate_miss" in result.stdout
    assert f"✗ includes('goodbye') [gate] score 0.00 < 1.00  evals/mixed.py:{line}" in result.stdout
    assert "actual:   'echo: hello'" in result.stdout


def test_skipped_eval_exits_0_and_shows_as_skipped(project: Project) -> None:
    _write_mixed(project)
    result = project.run("evals/mixed.py::skips")
    assert result.code == 0, result.output
    assert "SKIP   evals/mixed.py::skips" in result.stdout
    assert "skipped: not ready yet" in result.stdout
    assert "0 passed, 0 scored, 0 failed, 1 skipped" in result.stdout
    assert result.eval("skips")["runs"][0]["skip_reason"] == "not ready yet"


def test_one_failing_eval_fails_the_suite_whatever_the_others_do(project: Project) -> None:
    _write_mixed(project)
    result = project.run()
    assert result.code == 1, result.output
    assert "1 passed, 1 scored, 1 failed, 1 skipped (4 evals, 4 runs)" in result.stdout


# The second of three runs misses its gate: the pass rate is 2/3.
ONE_MISS_IN_THREE = """\
import itertools

from niceeval import define_eval
from niceeval.expect import satisfies

_runs = itertools.count()


@define_eval
async def stable(t):
    t.check(1, satisfies(lambda v: v == 1, "one is one"))


@define_eval
async def flaky(t):
    this_run = next(_runs)
    t.check(this_run, satisfies(lambda n: n != 1, "not the second run"))
"""


def test_runs_report_a_pass_rate_and_every_run(project: Project) -> None:
    project.write("evals/repeat.py", ONE_MISS_IN_THREE)
    result = project.run("--runs", "3")
    stable, flaky = result.eval("stable"), result.eval("flaky")
    assert stable["pass_rate"] == 1.0
    assert flaky["pass_rate"] == pytest.approx(2 / 3)
    assert [run["run_index"] for run in flaky["runs"]] == [0, 1, 2]  # in run order, whatever finished first
    assert sorted(run["outcome"] for run in flaky["runs"]) == ["failed", "passed", "passed"]
    assert all(run["duration_s"] >= 0 for run in flaky["runs"])
    assert result.report()["summary"]["runs"] == 6
    assert "2/3 runs passed (67%)" in result.stdout
    assert "3/3 runs passed (100%)" in result.stdout


def test_an_eval_failing_one_run_in_three_fails_by_default(project: Project) -> None:
    project.write("evals/repeat.py", ONE_MISS_IN_THREE)
    result = project.run("--runs", "3")
    assert result.code == 1, result.output
    assert result.eval("flaky")["status"] == "failed"
    assert result.eval("stable")["status"] == "passed"
    junit_runs = [c for c in result.junit().iter("testcase") if c.get("name", "").startswith("flaky[run ")]
    assert len(junit_runs) == 3
    assert sum(1 for c in junit_runs if c.find("failure") is not None) == 1


def test_an_eval_failing_one_run_in_three_passes_with_min_pass_rate_0_6(project: Project) -> None:
    project.write("evals/repeat.py", ONE_MISS_IN_THREE)
    result = project.run("--runs", "3", "--min-pass-rate", "0.6")
    assert result.code == 0, result.output
    assert result.eval("flaky")["pass_rate"] == pytest.approx(2 / 3)
    assert result.eval("flaky")["status"] != "failed"


def test_min_pass_rate_above_the_observed_rate_still_fails(project: Project) -> None:
    project.write("evals/repeat.py", ONE_MISS_IN_THREE)
    result = project.run("--runs", "3", "--min-pass-rate", "0.7")
    assert result.code == 1, result.output


def _ids(result_report: dict[str, object]) -> list[str]:
    evals = result_report["evals"]
    assert isinstance(evals, list)
    return sorted(e["id"] for e in evals)


def test_k_filter_runs_only_evals_whose_id_contains_the_text(project: Project) -> None:
    _write_mixed(project)
    result = project.run("-k", "MISS")
    assert _ids(result.report()) == ["evals/mixed.py::gate_miss", "evals/mixed.py::soft_miss"]
    assert "passes" not in result.stdout


def test_k_takes_pytests_expressions_and_a_malformed_one_exits_2(project: Project) -> None:
    _write_mixed(project)
    result = project.run("-k", "miss and not soft or passes")
    assert _ids(result.report()) == ["evals/mixed.py::gate_miss", "evals/mixed.py::passes"]
    malformed = project.run("-k", "miss and")
    assert malformed.code == 2
    assert "-k 'miss and': expected a part of an eval's id at column 9, found the end" in malformed.stderr
    assert malformed.json_text is None


def test_tag_filter_runs_only_evals_with_that_tag(project: Project) -> None:
    _write_mixed(project)
    result = project.run("--tag", "soft", "--tag", "fast")
    assert result.code == 0, result.output
    assert _ids(result.report()) == ["evals/mixed.py::passes", "evals/mixed.py::soft_miss"]


def test_file_and_name_selects_one_eval(project: Project) -> None:
    _write_mixed(project)
    result = project.run("evals/mixed.py::passes")
    assert result.code == 0, result.output
    assert _ids(result.report()) == ["evals/mixed.py::passes"]
    assert "1 eval × 1 run" in result.stdout


def test_unknown_name_after_file_is_a_usage_error_listing_the_names(project: Project) -> None:
    _write_mixed(project)
    result = project.run("evals/mixed.py::nope")
    assert result.code == 2, result.output
    assert "no eval named 'nope'" in result.output
    assert "gate_miss, passes, skips, soft_miss" in result.output


def test_directory_path_runs_the_modules_below_it_but_not_private_ones(project: Project) -> None:
    body = """\
        from niceeval import define_eval

        @define_eval
        async def {name}(t):
            pass
        """
    project.write("suite/a/one.py", body.format(name="one"))
    project.write("suite/a/b/two.py", body.format(name="two"))
    project.write("suite/_helpers.py", body.format(name="private_module"))
    project.write("suite/fixtures/data.py", body.format(name="fixture_module"))
    project.write("elsewhere/three.py", body.format(name="three"))
    result = project.run("suite")
    assert result.code == 0, result.output
    assert _ids(result.report()) == ["suite/a/b/two.py::two", "suite/a/one.py::one"]


def test_missing_path_exits_2_naming_the_path(project: Project) -> None:
    result = project.run("evals/not_there.py")
    assert result.code == 2
    assert "'evals/not_there.py' does not exist" in result.stderr
    assert result.json_text is None


def test_filters_that_match_nothing_exit_2_saying_so(project: Project) -> None:
    _write_mixed(project)
    result = project.run("-k", "no_such_eval")
    assert result.code == 2
    assert "no eval in evals matches -k 'no_such_eval' (" in result.stderr
    assert "found there): check the selection; `niceeval list` shows every eval with its id and tags." in result.stderr


CONCURRENT = """\
import os
from pathlib import Path

import anyio
from niceeval import define_eval

_in_flight = 0


async def _body():
    global _in_flight
    _in_flight += 1
    with Path(os.environ["PEAKS_FILE"]).open("a") as peaks:
        peaks.write(f"{_in_flight}\\n")
    await anyio.sleep(0.1)
    _in_flight -= 1


@define_eval
async def e1(t): await _body()
@define_eval
async def e2(t): await _body()
@define_eval
async def e3(t): await _body()
@define_eval
async def e4(t): await _body()
@define_eval
async def e5(t): await _body()
"""


@pytest.mark.parametrize("concurrency", [1, 3])
def test_concurrency_bounds_the_runs_in_flight(
    project: Project, concurrency: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    peaks = project.out / "peaks.txt"
    monkeypatch.setenv("PEAKS_FILE", str(peaks))
    project.write("evals/concurrent.py", CONCURRENT)
    result = project.run("--concurrency", str(concurrency))
    assert result.code == 0, result.output
    assert max(int(n) for n in peaks.read_text().split()) == concurrency


def test_concurrency_comes_from_the_config_without_the_flag(project: Project, monkeypatch: pytest.MonkeyPatch) -> None:
    peaks = project.out / "peaks.txt"
    monkeypatch.setenv("PEAKS_FILE", str(peaks))
    project.write("niceeval.config.py", "from niceeval import define_config\nconfig = define_config(concurrency=2)\n")
    project.write("evals/concurrent.py", CONCURRENT)
    result = project.run()
    assert result.code == 0, result.output
    assert max(int(n) for n in peaks.read_text().split()) == 2


SLOW = """\
import time

import anyio
from niceeval import define_eval
from niceeval.expect import includes


@define_eval
async def quick(t):
    await t.send("hi")
    t.check(t.reply, includes("hi"))


@define_eval
async def sleeps_async(t):
    await anyio.sleep(30)


@define_eval
def sleeps_sync(t):
    time.sleep(60)
"""


def test_an_eval_past_its_timeout_fails_with_timeout_error_and_the_others_pass(project: Project) -> None:
    project.write("evals/slow.py", SLOW)
    result = project.run("--timeout", "0.5")
    assert result.code == 1, result.output
    assert result.eval("quick")["status"] == "passed"
    for name in ("sleeps_async", "sleeps_sync"):
        run = result.eval(name)["runs"][0]
        assert run["outcome"] == "failed"
        assert run["error"]["type"] == "TimeoutError"
        decorator_line = project.line_of("evals/slow.py", f"def {name}") - 1  # an eval's line is its first
        assert run["error"]["location"] == f"evals/slow.py:{decorator_line}"
        assert 0.4 < run["duration_s"] < 2.0
    assert "the eval did not finish within its 0.5 s timeout" in result.stdout


def test_a_timed_out_sync_eval_does_not_keep_the_command_running(project: Project) -> None:
    project.write("evals/slow.py", SLOW)
    result = project.run("evals/slow.py::sleeps_sync", "--timeout", "0.5")
    assert result.code == 1, result.output
    assert result.wall_s < 30.0, "the command waited for the abandoned eval thread to finish (it sleeps 60 s)"


def test_timeout_stops_an_eval_waiting_on_a_slow_sync_agent(project: Project) -> None:
    project.write(
        "evals/slow_agent.py",
        """\
        import time

        from niceeval import define_eval

        def slow_agent(message):
            time.sleep(60)
            return "too late"

        @define_eval(agent=slow_agent)
        async def waits_for_agent(t):
            await t.send("hi")
        """,
    )
    result = project.run("--timeout", "0.5")
    assert result.code == 1, result.output
    run = result.eval("waits_for_agent")["runs"][0]
    assert run["error"]["type"] == "TimeoutError"
    assert result.wall_s < 30.0, "the command waited for the agent's thread to finish (it sleeps 60 s)"


def test_per_eval_timeout_wins_over_the_flag(project: Project) -> None:
    project.write(
        "evals/slow.py",
        """\
        import anyio
        from niceeval import define_eval

        @define_eval(timeout=0.3)
        async def short_fuse(t):
            await anyio.sleep(5)
        """,
    )
    result = project.run("--timeout", "60")
    assert result.code == 1, result.output
    assert "within its 0.3 s timeout" in result.eval("short_fuse")["runs"][0]["error"]["message"]


@pytest.mark.parametrize("kind", ["async def", "def"])
def test_an_exception_in_an_eval_fails_it_with_the_users_file_and_line(project: Project, kind: str) -> None:
    project.write(
        "evals/raises.py",
        f"""\
        from niceeval import define_eval

        def helper(value):
            return {{"a": 1}}[value]

        @define_eval
        {kind} crashes(t):
            helper("missing")

        @define_eval
        {kind} fine(t):
            pass
        """,
    )
    result = project.run()
    line = project.line_of("evals/raises.py", "return {")
    assert result.code == 1, result.output
    assert f"error KeyError: 'missing'  at evals/raises.py:{line}" in result.stdout
    run = result.eval("crashes")["runs"][0]
    assert run["outcome"] == "failed"
    assert run["error"]["type"] == "KeyError"
    assert run["error"]["location"] == f"evals/raises.py:{line}"
    assert 'helper("missing")' in run["error"]["traceback"]
    assert result.eval("fine")["status"] == "passed"


def test_an_exception_in_the_agent_fails_the_eval_at_the_agents_line(project: Project) -> None:
    project.write(
        "evals/agent_raises.py",
        """\
        from niceeval import define_eval

        def broken_agent(message):
            raise ConnectionError("agent is down")

        @define_eval(agent=broken_agent)
        async def talks_to_agent(t):
            await t.send("hi")
        """,
    )
    result = project.run()
    assert result.code == 1, result.output
    error = result.eval("talks_to_agent")["runs"][0]["error"]
    assert error["type"] == "ConnectionError"
    assert error["location"] == f"evals/agent_raises.py:{project.line_of('evals/agent_raises.py', 'raise')}"


SYNC_STOPS = """\
from niceeval import define_eval
from niceeval.expect import includes


@define_eval
def requires(t):
    t.send("hi")
    t.require(t.reply, includes("goodbye"))
    raise AssertionError("a failed require must stop the eval")


@define_eval
def skips(t):
    t.skip("sync skip")
"""


def test_a_failed_require_stops_a_sync_eval_as_a_failed_gate(project: Project) -> None:
    project.write("evals/sync_stops.py", SYNC_STOPS)
    result = project.run("evals/sync_stops.py::requires")
    assert result.code == 1, result.output
    run = result.eval("requires")["runs"][0]
    assert run["error"] is None
    assert [(a["name"], a["state"]) for a in run["assertions"]] == [("includes('goodbye')", "failed")]


def test_skip_in_a_sync_eval_marks_it_skipped(project: Project) -> None:
    project.write("evals/sync_stops.py", SYNC_STOPS)
    result = project.run("evals/sync_stops.py::skips")
    assert result.code == 0, result.output
    assert result.eval("skips")["status"] == "skipped"
    assert result.eval("skips")["runs"][0]["skip_reason"] == "sync skip"


def test_a_multi_line_miss_reason_is_printed_one_indented_line_each(project: Project) -> None:
    project.write(
        "evals/diff.py",
        """\
        from niceeval import define_eval
        from niceeval.expect import equals

        @define_eval
        async def compares(t):
            t.check({"a": 1, "b": 2}, equals({"a": 2, "b": 3}))
        """,
    )
    result = project.run()
    assert result.code == 1, result.output
    lines = result.stdout.splitlines()
    first = next(i for i, line in enumerate(lines) if "reason:   $.a: expected 2, got 1" in line)
    assert lines[first + 1] == " " * (lines[first].index("reason:") + 2) + "$.b: expected 3, got 2"
