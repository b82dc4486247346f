"""Every view of one suite run says the same numbers: the console, the JSON report, the HTML report and the viewer.

`niceeval run --runs 3` with a judge whose first run of each eval is read from the judge cache (the runs after
the first ask afresh, by design), against the local LLM server over HTTP. Each view is read as a user reads it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from niceeval.store import Store
from niceeval.testing import LLMRequest, LLMServer, Reply, TokenUsage
from niceeval.web import Access, ViewerSettings, create_app

from ._project import Project

CONFIG = """\
from niceeval import define_config


def echo(message: str) -> str:
    return "echo: " + message


config = define_config(
    agent=echo,
    judge={"model": "openai/judge"},
    pricing={"openai/judge": {"input_per_mtok": 3.0, "output_per_mtok": 15.0}},
)
"""
EVALS = """\
from niceeval import define_eval


@define_eval
async def polite(t):
    await t.send("hello")
    t.judge.rubric("Is the reply polite?")


@define_eval
async def brief(t):
    await t.send("bye")
    t.judge.rubric("Is the reply brief?")
"""
ONE_CALL = re.compile(r"(\d+) calls? \+ (\d+) cached")


def verdict(request: LLMRequest) -> Reply:
    del request
    return Reply(
        data={"reason": "fine", "pass": True, "score": 0.9}, usage=TokenUsage(input_tokens=100, output_tokens=10)
    )


@pytest.fixture
def server(llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch) -> LLMServer:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("OPENAI_BASE_URL", llm_server.base_url)
    llm_server.set_script(verdict)
    return llm_server


def _counts(text: str) -> list[tuple[int, int]]:
    return [(int(calls), int(cached)) for calls, cached in ONE_CALL.findall(text)]


def _viewer_page(root: Path, path: str) -> str:
    with Store.open(f"sqlite:///{root / '.niceeval' / 'results.db'}") as store:
        app = create_app(ViewerSettings(store=store, access=Access(token=None, loopback=True)))
        response = TestClient(app, base_url="http://127.0.0.1:7575").get(path)
        assert response.status_code == 200, response.text
        return response.text


def test_judge_calls_and_cost_read_the_same_in_every_report(project: Project, server: LLMServer) -> None:
    project.write("niceeval.config.py", CONFIG)
    project.write("evals/judged.py", EVALS)
    assert project.run().code == 0  # fills the judge cache: 2 verdicts
    requests_before = len(server.requests)
    html_path = project.out / "report.html"
    result = project.run("--runs", "3", "--html", str(html_path))
    assert result.code == 0, result.output
    asked = len(server.requests) - requests_before
    assert asked == 4  # run 1 of each eval from the cache, runs 2 and 3 asked afresh

    # The console
    console = next(line for line in result.stdout.splitlines() if line.startswith("judge: "))
    assert console == "judge: 4 calls + 2 cached, 440 tokens, $0.0018", console
    # The JSON report: numbers, the same ones
    spend = result.report()["summary"]["judge_spend"]
    assert (spend["calls"], spend["cached"], spend["tokens"], spend["cost"]) == (4, 2, 440, pytest.approx(0.0018))
    calls = [c for e in result.report()["evals"] for r in e["runs"] for a in r["assertions"] for c in a["judge_calls"]]
    assert sorted((c["cached"], c["asked"]) for c in calls) == [(False, True)] * 4 + [(True, False)] * 2
    # The HTML report: the spend row and the judge-calls table agree with each other and with the console
    html = html_path.read_text(encoding="utf-8")
    spend_row = re.search(r"<th>Judges</th><td>([^<]+)</td><td class=\"faint\">([^<]+)</td>", html)
    assert spend_row is not None
    assert spend_row.group(1) == "$0.0018" and spend_row.group(2).startswith("4 calls + 2 cached · 440 tokens")
    model_row = html[html.index("<code>openai/judge</code></th>") :]
    assert _counts(model_row)[0] == (4, 2) and "440 tokens · $0.0018" in model_row
    run_facts = re.findall(r"judges \$[\d.]+ · (\d+) calls?(?: \+ (\d+) cached)?", html)
    per_run = [(int(calls), int(cached or 0)) for calls, cached in run_facts]
    assert sorted(per_run) == [(0, 1), (0, 1), (1, 0), (1, 0), (1, 0), (1, 0)]
    assert re.search(r"\d+ asked ·", html) is None
    # The viewer's run page: the same table, and the same totals in its spend panel
    run_id = re.search(r"stored as run (\w+)", result.stdout)
    assert run_id is not None
    page = _viewer_page(project.root, f"/runs/{run_id.group(1)}")
    assert _counts(page[page.index("<h2>Spend</h2>") :])[:2] == [(4, 2), (4, 2)]
    viewer_row = page[page.index("<code>openai/judge</code></th>") :]
    assert "440 tokens · $0.0018" in viewer_row
    assert "<th>Judges</th><td>$0.0018</td>" in page


VARIANT_EVALS = """\
from niceeval import define_eval
from niceeval.expect import includes


@define_eval(cases=[{"id": "hi", "input": "hi"}, {"id": "bye", "input": "bye"}],
             variants={"tone": {"plain": "", "loud": "!"}})
async def greets(t):
    await t.send(t.case["input"] + t.variant["tone"])
    t.check(t.reply, includes("!"))
"""


def _table(html: str) -> list[str]:
    body = html.split('<table class="data variants">', 1)[1].split("</table>", 1)[0]
    return [" ".join(re.sub(r"<[^>]+>", " ", row).split()) for row in body.split("<tr>")[2:]]


def test_the_viewers_run_page_shows_the_variants_table_of_the_html_report(project: Project) -> None:
    project.write("evals/varied.py", VARIANT_EVALS)
    html_path = project.out / "report.html"
    result = project.run("--runs", "2", "--html", str(html_path))
    assert result.code == 1 and "FAIL" in result.output, result.output
    assert "PASS   evals/varied.py::greets[hi][tone=loud]" in result.stdout, result.output
    in_report = _table(html_path.read_text(encoding="utf-8"))
    assert [row.split()[:3] for row in in_report] == [["tone=plain", "4", "0%"], ["tone=loud", "4", "100%"]]
    run_id = re.search(r"stored as run (\w+)", result.stdout)
    assert run_id is not None
    in_viewer = _table(_viewer_page(project.root, f"/runs/{run_id.group(1)}"))
    assert [row.rsplit(" ", 2)[0] for row in in_viewer] == [row.rsplit(" ", 2)[0] for row in in_report]
    # `niceeval show` rebuilds the console report from the store: the variants table too (the store keeps them)
    shown = project.cli("show", run_id.group(1))
    live = result.stdout[result.stdout.index("Variants:") :].splitlines()[:3]
    assert shown.stdout[shown.stdout.index("Variants:") :].splitlines()[:3] == live


FLAKY_CONFIG = """\
import itertools

from niceeval import define_config

_sent = itertools.count()


def flaky(message: str) -> str:
    return "no" if next(_sent) % 3 == 0 else "ok"


config = define_config(agent=flaky)
"""
FLAKY_EVALS = """\
from niceeval import define_eval
from niceeval.expect import includes


@define_eval(sequential_runs=True)
async def sometimes(t):
    await t.send("x")
    t.check(t.reply, includes("ok"))


@define_eval
async def always(t):
    t.check("ok", includes("ok"))
"""


def test_the_pass_rate_is_over_runs_in_every_view(project: Project) -> None:
    project.write("niceeval.config.py", FLAKY_CONFIG)
    project.write("evals/flaky.py", FLAKY_EVALS)
    html_path = project.out / "report.html"
    result = project.run("--runs", "3", "--html", str(html_path))
    assert "1 passed, 0 scored, 1 failed" in result.stdout, result.output  # the evals' verdicts
    assert "pass rate 83% (" in result.stdout  # 5 of the 6 runs
    assert result.report()["summary"]["pass_rate"]["value"] == pytest.approx(5 / 6)
    card = r'<div class="label">Pass rate</div><div class="value"[^>]*>([^<]+)<'
    assert re.findall(card, html_path.read_text(encoding="utf-8")) == ["83%"]
    run_id = re.search(r"stored as run (\w+)", result.stdout)
    assert run_id is not None
    assert re.findall(card, _viewer_page(project.root, f"/runs/{run_id.group(1)}")) == ["83%"]
    (listed,) = [line for line in project.cli("runs").stdout.splitlines() if line.startswith(run_id.group(1))]
    assert "1/0/1/0" in listed and " 83% " in listed  # the evals' verdicts, and the pass rate over runs
    assert "83%" in _viewer_page(project.root, "/").split(f'href="/runs/{run_id.group(1)}"', 1)[1][:2000]
