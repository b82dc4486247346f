"""Failure classes through `niceeval run`: the console, the JSON and JUnit reports, and the store say them.

The offline server runs in the test process (`llm_server`) and answers 503 to every request for model `down`;
the command reaches it through `OPENAI_BASE_URL`.
"""

from __future__ import annotations

import pytest

from niceeval.store import Store
from niceeval.testing import Fault, LLMServer, Reply

from ._project import Project

CONFIG = """\
from niceeval import define_config


def echo(message: str) -> str:
    return "echo: " + message


config = define_config(agent=echo, infra_retries=1{extra})
"""

AGENTS = """\
from niceeval.agents import ModelAgentOptions, openai_agent
from niceeval.providers import RetryPolicy

down = openai_agent(
    "openai/down", options=ModelAgentOptions(retry=RetryPolicy(max_retries=1, base_delay=0.001, max_delay=0.01))
)
"""

EVALS = """\
from niceeval import define_eval
from niceeval.expect import includes
from _agents import down


@define_eval(agent=down)
async def outage(t):
    await t.send("hi")


@define_eval
async def passes(t):
    await t.send("hi")


@define_eval
async def misses(t):
    await t.send("hi")
    t.check(t.reply, includes("never"))


@define_eval
async def own_bug(t):
    await t.send("hi")
    raise ValueError("the eval's own code is wrong")
"""


@pytest.fixture
def down(llm_server: LLMServer) -> dict[str, str]:
    llm_server.set_script(lambda request: Reply(text="fine"))
    llm_server.faults = lambda request: Fault.server_error(503) if request.model == "down" else None
    return {"OPENAI_API_KEY": "test-key", "OPENAI_BASE_URL": llm_server.base_url}


def _project(project: Project, extra: str = "") -> None:
    project.write("niceeval.config.py", CONFIG.format(extra=extra))
    project.write("evals/_agents.py", AGENTS)  # a helper beside the evals (files starting with `_` are not evals)
    project.write("evals/classes.py", EVALS)


def test_the_reports_and_the_store_tell_the_classes_apart(
    project: Project, down: dict[str, str], llm_server: LLMServer
) -> None:
    _project(project)
    done = project.run("--runs", "2", "--html", str(project.out / "report.html"), env=down)
    assert done.code == 1, done.output
    page = (project.out / "report.html").read_text(encoding="utf-8")
    assert "2 runs not counted: infra" in page
    assert "failed for <strong>infra</strong> (not counted in the pass rate), tried 2 times" in page
    assert "2 runs not counted: infra" in done.stdout
    assert "failed for infra (not counted in the pass rate; tried 2 times)" in done.stdout
    assert "failed for eval" in done.stdout

    report = done.report()
    assert report["summary"]["not_counted"] == {"infra": 2}
    outage = done.eval("outage")
    assert (outage["status"], outage["pass_rate"], outage["not_counted"]) == ("failed", None, {"infra": 2})
    assert [(r["failure"], r["attempts"]) for r in outage["runs"]] == [("infra", 2), ("infra", 2)]
    assert [r["failure"] for r in done.eval("misses")["runs"]] == ["agent", "agent"]
    assert [r["failure"] for r in done.eval("own_bug")["runs"]] == ["eval", "eval"]
    assert [r["failure"] for r in done.eval("passes")["runs"]] == [None, None]
    # the suite's rate is over the three cases with counted runs: passes 2/2, misses 0/2, own_bug 0/2
    assert report["summary"]["pass_rate"]["value"] == pytest.approx(1 / 3)
    assert report["summary"]["pass_rate"]["clusters"] == 3
    # 2 runs x 2 attempts x 2 requests (the call and its retry)
    assert sum(1 for r in llm_server.requests if r.model == "down") == 8

    case = done.testcase("outage[run 1]")
    properties = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert (properties["failure_class"], properties["attempts"]) == ("infra", "2")

    with Store.open(".niceeval/results.db", root=project.root) as store:
        detail = store.run("latest")
        stored = {(i.eval_id.rpartition("::")[2], i.run_index): (i.failure, i.attempts) for i in detail.eval_runs}
        assert stored[("outage", 1)] == ("infra", 2)
        assert stored[("own_bug", 0)] == ("eval", 1)
        assert stored[("passes", 0)] == (None, 1)
        assert (
            store.eval_run("latest", detail.eval_runs[0].eval_id, 0).failure
            == stored[(detail.eval_runs[0].eval_id.rpartition("::")[2], 0)][0]
        )
        assert detail.run.failed == 3  # outage (nothing counted), misses, own_bug


def test_a_config_hook_reclassifies_and_the_flag_sets_the_retries(project: Project, down: dict[str, str]) -> None:
    hook = ', classify_failure=lambda run: "infra" if run.error and run.error.type == "ValueError" else None'
    _project(project, extra=hook)
    done = project.run("--infra-retries", "0", "-k", "own_bug or passes", env=down)
    # own_bug's only run is infra now, not retried: not counted, and an eval with nothing counted never passes
    assert done.code == 1, done.output
    assert [(r["failure"], r["attempts"]) for r in done.eval("own_bug")["runs"]] == [("infra", 1)]
    assert (done.eval("own_bug")["status"], done.eval("own_bug")["pass_rate"]) == ("failed", None)
    assert done.report()["summary"]["not_counted"] == {"infra": 1}


FATAL = """\
from niceeval import define_eval
from niceeval import ExperimentFatalError


@define_eval
async def first(t):
    await t.send("hi")


@define_eval
async def fatal(t):
    raise ExperimentFatalError("the API key was revoked", failure="infra")


@define_eval
async def never(t):
    await t.send("hi")
"""


def test_experiment_fatal_error_stops_the_run_keeps_what_ran_and_records_why(project: Project) -> None:
    project.write("niceeval.config.py", CONFIG.format(extra=", concurrency=1"))
    project.write("evals/fatal.py", FATAL)
    done = project.run()
    assert done.code == 1, done.output
    why = "stopped by ExperimentFatalError in evals/fatal.py::fatal (run 1): the API key was revoked"
    assert f"{why}: 1 run not started" in done.stdout
    assert done.report()["stopped"] == why
    with Store.open(".niceeval/results.db", root=project.root) as store:
        detail = store.run("latest")
        assert [(i.eval_id, i.failure) for i in detail.eval_runs] == [
            ("evals/fatal.py::first", None),
            ("evals/fatal.py::fatal", "infra"),
        ]
        assert (detail.run.status, detail.run.exit_code, detail.run.stopped) == ("finished", 1, why)


@pytest.mark.parametrize(("flag", "value"), [("--stop-after-infra", "0"), ("--infra-retries", "-1")])
def test_a_bad_count_names_the_flag(project: Project, flag: str, value: str) -> None:
    project.write("evals/a.py", "from niceeval import define_eval\n\n\n@define_eval\nasync def a(t):\n    pass\n")
    done = project.run(flag, value, "--no-store")
    assert done.code == 2
    least = 1 if flag == "--stop-after-infra" else 0
    assert f"{flag} takes a whole number of at least {least}, got '{value}'" in done.stderr
