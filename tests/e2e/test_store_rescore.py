"""`niceeval rescore RUN`: eval functions run again over the recorded conversation; the agent is never called."""

from __future__ import annotations

from pathlib import Path

from niceeval.store import Store

from ._project import Project

COUNTING_AGENT = """\
from pathlib import Path

from niceeval import define_config

CALLS = Path(__file__).resolve().parent / "agent-calls.txt"


def agent(message, session):
    with CALLS.open("a") as calls:
        calls.write(message + "\\n")
    if "order" in message:
        session.tool("lookup_order", {"id": 7}, output={"status": "shipped"})
    return "echo: " + message


config = define_config(agent=agent)
"""

EVALS = """\
from niceeval import define_eval
from niceeval.expect import includes


@define_eval
async def conversation(t):
    await t.send("where is my order?")
    await t.send("thanks")
    t.check(t.reply, includes("{expected}"))
    t.called_tool("{tool}")
"""


def agent_calls(project: Project) -> int:
    calls = project.root / "agent-calls.txt"
    return len(calls.read_text().splitlines()) if calls.exists() else 0


def write(project: Project, *, expected: str = "thanks", tool: str = "lookup_order", first: str = "") -> Path:
    project.write("niceeval.config.py", COUNTING_AGENT)
    body = EVALS.format(expected=expected, tool=tool)
    if first:
        body = body.replace("where is my order?", first)
    return project.write("evals/talk.py", body)


def test_rescore_scores_changed_checks_without_calling_the_agent(project: Project, store_url: str) -> None:
    write(project)
    original = project.run("--store", store_url).report()["run_id"]
    calls = agent_calls(project)
    write(project, expected="you're welcome", tool="cancel_order")
    rescored = project.cli("rescore", original, "--store", store_url, "--json", str(project.out / "report.json"))
    assert rescored.code == 1, rescored.output
    assert agent_calls(project) == calls  # the record answered every turn
    assert "FAIL   evals/talk.py::conversation" in rescored.stdout
    assert "expected: includes \"you're welcome\"" in rescored.stdout
    assert "called_tool('cancel_order')" in rescored.stdout
    with Store.open(store_url) as store:
        info = store.runs()[0]
        record = store.eval_run(info.id, "evals/talk.py::conversation")
    assert (info.kind, info.parent_id, info.failed) == ("rescore", original, 1)
    assert [e.type for e in record.events] == ["message", "action.called", "message", "message", "message"]


def test_rescore_of_an_unchanged_eval_gives_the_same_verdict(project: Project, store_url: str) -> None:
    write(project)
    original = project.run("--store", store_url).report()["run_id"]
    rescored = project.cli("rescore", original, "--store", store_url)
    assert rescored.code == 0, rescored.output
    assert "1 passed, 0 scored, 0 failed" in rescored.stdout


def test_a_message_the_record_lacks_is_a_replay_miss_never_sent_live(project: Project, store_url: str) -> None:
    write(project)
    original = project.run("--store", store_url).report()["run_id"]
    calls = agent_calls(project)
    write(project, first="where is my parcel?")
    rescored = project.cli("rescore", original, "--store", store_url)
    assert rescored.code == 1
    assert "replay miss: the eval sent 'where is my parcel?' as turn 1, but the record sent 'where is my order?'" in (
        rescored.stdout
    )
    assert agent_calls(project) == calls


def test_rescore_of_an_unknown_run_exits_2(project: Project, store_url: str) -> None:
    write(project)
    project.run("--store", store_url)
    rescored = project.cli("rescore", "abcdef99", "--store", store_url)
    assert rescored.code == 2 and "no suite run 'abcdef99'" in rescored.stderr
