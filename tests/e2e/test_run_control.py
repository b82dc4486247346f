"""`--budget`, `-x/--exitfirst`, `--dry-run` and `--jsonl`, through the real command."""

from __future__ import annotations

import json

from ._project import Project

PRICED = """\
from niceeval import define_config
from niceeval.agents import function_agent


@function_agent
def spender(message, session):
    session.usage("openai/gpt-4o-mini", input_tokens=1_000_000, output_tokens=0)  # $0.15 a run
    return "ok"


@function_agent
def unpriced(message, session):
    session.usage("acme/secret-model", input_tokens=10, output_tokens=1)
    return "ok"


config = define_config(agent=spender, concurrency=1)
"""

EVALS = """\
from niceeval import define_eval
from niceeval.expect import includes


@define_eval
async def first(t):
    await t.send("a")


@define_eval
async def second(t):
    await t.send("b")
    t.check(t.reply, includes("never"))


@define_eval
async def third(t):
    await t.send("c")
"""


def test_budget_stops_starting_runs_once_spend_reaches_it(project: Project) -> None:
    project.write("niceeval.config.py", PRICED)
    project.write("evals/spend.py", EVALS.replace('includes("never")', 'includes("ok")'))
    done = project.run("--budget", "0.25", "--runs", "2", "--no-store")
    report = done.report()
    assert done.code == 1, done.output
    assert report["summary"]["runs"] == 2  # $0.15 + $0.15 reached $0.25: no third run started
    assert report["not_started"] == 4
    assert report["stopped"].startswith("budget $0.25 reached ($0.3000 spent")
    assert "4 runs not started" in done.stdout


def test_budget_without_a_price_names_the_model_and_how_to_price_it(project: Project) -> None:
    project.write("niceeval.config.py", PRICED.replace("agent=spender", "agent=unpriced"))
    project.write("evals/spend.py", EVALS)
    done = project.run("--budget", "1", "--no-store")
    assert done.code == 2, done.output
    assert "--budget needs a price for every model in use, and acme/secret-model has none" in done.stdout
    assert "define_config(pricing={'acme/secret-model': {'input_per_mtok'" in done.stdout
    assert done.report()["summary"]["runs"] == 1  # the run made is kept


def test_exitfirst_stops_after_the_first_failed_eval(project: Project) -> None:
    project.write("niceeval.config.py", PRICED)
    project.write("evals/spend.py", EVALS)
    done = project.run("-x", "--no-store")
    report = done.report()
    assert done.code == 1
    assert [e["status"] for e in report["evals"]] == ["passed", "failed", None]
    assert report["stopped"] == "stopped after the first failed eval (evals/spend.py::second) (-x/--exitfirst)"
    assert report["not_started"] == 1


def test_dry_run_prints_the_plan_and_calls_nothing(project: Project) -> None:
    project.write(
        "evals/judged.py",
        """\
from niceeval import define_eval


@define_eval(cases=[{"q": "a"}, {"q": "b"}], variants={"tone": ["short", "long"]})
async def judged(t):
    turn = await t.send(t.case["q"])
    t.judge.rubric("polite?")
    turn.judge.autoevals.closed_qa("answers?")


@define_eval
async def plain(t):
    raise AssertionError("a dry run must not run evals")
""",
    )
    done = project.cli("run", "--dry-run", "--runs", "3")
    assert done.code == 0, done.output
    lines = done.stdout.splitlines()
    assert "evals/judged.py::judged: 2 cases x 2 variants x 3 runs = 12 runs, 24 judge calls" in lines
    assert "evals/judged.py::plain: 1 case x 1 variant x 3 runs = 3 runs, 0 judge calls" in lines
    assert lines[-1].startswith("plan: 2 evals, 5 eval x case x variant, 15 runs, 24 judge calls expected; ")
    assert not (project.root / ".niceeval" / "results.db").exists()


def test_jsonl_streams_one_object_per_run_and_suite_event(project: Project) -> None:
    project.write("evals/spend.py", EVALS)
    done = project.cli("run", "--jsonl", "-", "--no-store")
    assert done.code == 1
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert [e["event"] for e in events] == [
        "suite.started",
        "run.finished",
        "run.finished",
        "run.finished",
        "suite.finished",
    ]
    assert events[0]["runs"] == 3
    finished = {e["eval_id"]: e["run"]["outcome"] for e in events[1:4]}
    assert finished == {
        "evals/spend.py::first": "passed",
        "evals/spend.py::second": "failed",
        "evals/spend.py::third": "passed",
    }
    assert events[-1]["exit_code"] == 1 and events[-1]["evals"]["failed"] == 1
    assert "1 failed" in done.stderr  # the console report moved to stderr


def test_jsonl_to_a_file(project: Project) -> None:
    project.write("evals/spend.py", EVALS)
    target = project.out / "events.jsonl"
    project.cli("run", "--jsonl", str(target), "--no-store")
    kinds = [json.loads(line)["event"] for line in target.read_text().splitlines()]
    assert kinds[0] == "suite.started" and kinds[-1] == "suite.finished" and kinds.count("run.finished") == 3


def test_dry_run_prices_the_judge_calls_at_their_capped_prompt(project: Project) -> None:
    project.write(
        "niceeval.config.py",
        """\
from niceeval import define_config

config = define_config(
    judge={"model": "openai/judge", "max_chars": 40_000},
    pricing={"openai/judge": {"input_per_mtok": 1.0, "output_per_mtok": 10.0}},
)
""",
    )
    project.write(
        "evals/judged.py",
        """\
from niceeval import define_eval


@define_eval(cases=[{"q": "a"}, {"q": "b"}])
async def judged(t):
    await t.send(t.case["q"])
    t.judge.rubric("polite?")


@define_eval(judge={"model": "acme/unpriced"})
async def other(t):
    await t.send("hi")
    t.judge.rubric("polite?")
""",
    )
    done = project.cli("run", "--dry-run", "--runs", "3")
    assert done.code == 0, done.output
    # 6 calls of at most 10,000 input tokens ($1/M) and 300 output tokens ($10/M) each
    assert (
        "judge cost: at most ~$0.0780 (6 calls to openai/judge, 3 calls to acme/unpriced; prompts capped at 40,000 "
        "characters); no price for acme/unpriced (define_config(pricing={...}))."
    ) in done.stdout.splitlines()
