"""The viewer in headless Chromium, over a store filled by real `niceeval run`s of a small project.

The project's agent is a function whose behaviour changes with SHOP_VERSION (version 2 turns rude, so the
refund eval flips from passed to failed); its judge is the local LLM server, which fails replies that refuse
to help. One eval's agent replies with hostile HTML. `niceeval view` runs as a subprocess on 127.0.0.1.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from _viewer import chromium, viewer

from niceeval.testing import LLMRequest, LLMServer, Reply

pytestmark = pytest.mark.slow

HOSTILE = '<script>alert(1)</script><img src=x onerror="alert(2)"><a href="javascript:alert(3)">x</a></textarea>'
CONFIG = """\
import os

from niceeval import define_config
from niceeval.agents import FunctionSession

HOSTILE = {hostile!r}


def shop(message: str, session: FunctionSession) -> str:
    rude = os.environ.get("SHOP_VERSION") == "2"
    session.usage("openai/shop", input_tokens=100, output_tokens=20, cost=0.002 if rude else 0.001)  # v2 costs double
    if "refund" in message:
        session.tool("lookup_order", {{"order_id": "1234"}}, output={{"status": "shipped"}})
        return "Go away." if rude else "Your refund for order #1234 is on its way."
    if "arrive" in message:
        return "No idea." if rude else "Within 5 days."
    if "hostile" in message:
        return HOSTILE
    return "Hello! How can I help?"


config = define_config(
    agent=shop,
    judge={{"model": "openai/judge"}},
    pricing={{"openai/judge": {{"input_per_mtok": 3.0, "output_per_mtok": 15.0}}}},
)
"""
EVALS = '''\
from niceeval import EvalContext, define_eval
from niceeval.expect import includes


@define_eval(tags=["billing"])
async def refund(t: EvalContext) -> None:
    """A refund request gets the order and a timeline."""
    await t.send("I want a refund for order 1234")
    t.judge.rubric("Names the order and promises the refund.").at_least(0.7).gate()
    await t.send("When will it arrive?")
    t.judge.rubric("Gives a timeline.").at_least(0.7)
    t.called_tool("lookup_order")


@define_eval(tags=["support"])
async def greeting(t: EvalContext) -> None:
    await t.send("hello")
    t.check(t.reply, includes("help"))


@define_eval(tags=["security"])
async def hostile(t: EvalContext) -> None:
    await t.send("say something hostile")
    t.check(t.reply, includes("never said"))
'''


def judge(request: LLMRequest) -> Reply:
    """The judge fails replies that refuse to help, passes the rest."""
    rude = any(word in request.last_user_text for word in ("Go away.", "No idea."))
    verdict = (
        {"reason": "The reply refuses to help the customer.", "pass": False, "score": 0.1}
        if rude
        else {"reason": "Polite, names order #1234 and what happens next.", "pass": True, "score": 0.9}
    )
    return Reply(data=verdict)


@dataclass(frozen=True)
class Site:
    """The project, its two suite runs, and the viewer serving them."""

    root: Path
    url: str
    before: str
    after: str
    env: dict[str, str]

    def run(self, *args: str, version: str = "1") -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "niceeval.cli", "run", *args],
            cwd=self.root,
            env={**os.environ, **self.env, "SHOP_VERSION": version},
            capture_output=True,
            text=True,
            timeout=120,
        )


def _run_id(done: subprocess.CompletedProcess[str]) -> str:
    for line in done.stdout.splitlines():
        if line.startswith("stored as run "):
            return line.split()[3]
    raise AssertionError(f"no run stored:\n{done.stdout}\n{done.stderr}")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    root = tmp_path_factory.mktemp("shop")
    (root / "niceeval.config.py").write_text(CONFIG.format(hostile=HOSTILE))
    (root / "evals").mkdir()
    (root / "evals" / "shop.py").write_text(EVALS)
    with LLMServer(judge) as server:
        env = {"OPENAI_API_KEY": "test-key", "OPENAI_BASE_URL": server.base_url}
        draft = Site(root=root, url="", before="", after="", env=env)
        before = _run_id(draft.run(version="1"))
        after = _run_id(draft.run(version="2"))
        with viewer(root) as url:
            yield Site(root=root, url=url.rstrip("/"), before=before, after=after, env=env)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as launched:
        yield launched


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A fresh page that records dialogs and Content-Security-Policy complaints."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    opened = context.new_page()
    opened.dialogs = []
    opened.csp = []
    opened.on("dialog", lambda dialog: (opened.dialogs.append(dialog.message), dialog.dismiss()))
    opened.on("console", lambda m: opened.csp.append(m.text) if "Content Security Policy" in m.text else None)
    yield opened
    context.close()


def test_the_runs_list_shows_both_runs_and_the_trend(site: Site, page: Any) -> None:
    page.goto(site.url + "/")
    assert page.locator("table.runs tbody tr").count() == 2
    assert page.locator("table.runs tbody tr").first.locator("td").first.inner_text().startswith(site.after[:12])
    assert page.locator("svg.trend circle").count() == 2


def test_drill_into_the_failed_eval_and_read_the_judge_per_round(site: Site, page: Any) -> None:
    page.goto(site.url + "/")
    page.locator("table.runs tbody tr").first.locator("a").first.click()
    listed = page.locator("table.evals tbody tr")
    assert listed.locator(".badge").first.inner_text() == "failed"  # failures first
    row = listed.filter(has_text="::refund")
    assert row.locator(".badge").first.inner_text() == "failed"
    row.locator("a", has_text="refund").click()
    rounds = page.locator("section.round")
    assert rounds.count() == 2
    assert "Go away." in rounds.nth(0).inner_text()
    assert "The reply refuses to help the customer." in rounds.nth(0).locator(".verdict").inner_text()
    assert "No idea." in rounds.nth(1).inner_text() and rounds.nth(1).locator(".verdict").count() == 1
    judged = page.locator("details.assertion", has_text="Names the order")
    judged.locator("details.prompt summary").click()
    assert "Go away." in judged.locator(".prompt-msg").last.inner_text()  # the exact prompt sent


def test_every_fold_shows_its_marker_and_opens_from_the_keyboard(site: Site, page: Any) -> None:
    assert page.goto(f"{site.url}/runs/{site.after}/eval?id=evals/shop.py::refund").status == 200
    markers = page.locator("details > summary").evaluate_all(
        "summaries => summaries.map(s => [getComputedStyle(s).display, getComputedStyle(s, '::before').content])"
    )
    assert ["flex", '"\u25b8"'] in markers  # the assertions' summaries are flex boxes: they keep a marker too
    assert all(content == '"\u25b8"' for _, content in markers), markers
    closed = page.locator("details.assertion").evaluate_all("folds => folds.map(f => f.open)").index(False)
    folded = page.locator("details.assertion").nth(closed)
    folded.locator("summary").focus()
    page.keyboard.press("Enter")
    assert folded.get_attribute("open") is not None
    assert folded.locator("summary").evaluate("s => getComputedStyle(s, '::before').transform") != "none"


def test_compare_shows_the_flip_and_the_two_replies(site: Site, page: Any) -> None:
    page.goto(f"{site.url}/compare?base={site.before}&head={site.after}")
    flip = page.locator("table.flips tbody tr")
    assert flip.count() == 1
    assert " ".join(flip.inner_text().split()).startswith("evals/shop.py::refund passed → failed")
    (rubric,) = page.locator("table.mean-scores tbody tr").all()  # both rubrics of the one graded case
    shown = " ".join(rubric.inner_text().split())
    assert shown == "rubric 1 0.90 0.10 noise: -0.80, 1 shared case: not enough to tell –"
    cost = " ".join(page.locator("table.usage tbody tr", has_text="cost per eval run").inner_text().split())
    assert cost == "cost per eval run 3 $0.0013 $0.0027 worse: +100% (95% CI +100% to +100%)"
    assert "worse on cost (+100%, 95% CI +100% to +100%)" in page.locator("p.comparison-verdict").inner_text()
    flip.locator("a", has_text="side by side").click()
    before, after = page.locator("section.side").nth(0), page.locator("section.side").nth(1)
    assert "order #1234 is on its way" in before.inner_text() and "Go away." in after.inner_text()


def test_hostile_output_is_shown_as_text_and_runs_nothing(site: Site, page: Any) -> None:
    for path in (f"/runs/{site.after}", "/compare?show=all", "/evals/history?id=evals/shop.py::hostile"):
        assert page.goto(site.url + path).status == 200
    page.goto(f"{site.url}/runs/{site.after}/eval?id=evals/shop.py::hostile")
    reply = page.locator(".msg.assistant pre.text").first
    assert reply.inner_text() == HOSTILE
    assert page.locator("main script, main img, main a[href^='javascript']").count() == 0
    assert page.dialogs == [] and page.csp == []


def test_a_case_written_in_the_form_runs_and_shows_its_result(site: Site, page: Any) -> None:
    page.goto(site.url + "/cases/new")
    page.fill("#name", "late_refund")
    page.fill("#description", "A customer asks where the refund is.")
    page.fill("#tools", "lookup_order")
    page.fill("#round-0-prompt", "Where is my refund for order 1234?")
    page.fill("#round-0-criteria", "Names the order.")
    page.click("button[value=save]")
    assert page.url.endswith("/cases/late_refund"), page.locator("main").inner_text()
    assert "ui_late_refund" in page.locator("pre.code").first.inner_text()
    done = site.run("ui::late_refund")
    assert done.returncode == 0, done.stdout + done.stderr
    page.goto(site.url + "/cases")
    row = page.locator("table.cases tbody tr", has_text="late_refund")
    assert row.locator(".badge", has_text="passed").count() == 1
    row.locator("a", has_text="passed").click()
    assert "Where is my refund" in page.locator("section.round").first.inner_text()
    assert "round 1: Names the order." in page.locator("section.round .verdict").first.inner_text()


def test_a_form_with_mistakes_says_what_to_fix(site: Site, page: Any) -> None:
    page.goto(site.url + "/cases/new")
    page.fill("#name", "Bad Name!")
    page.check("input[name=revival]")
    page.click("button[value=save]")
    errors = page.locator(".field-error").all_inner_texts()
    assert any("lowercase letters" in e for e in errors) and any("message the user sends" in e for e in errors)
    assert page.locator("#name").input_value() == "Bad Name!"


def test_the_token_is_demanded_off_loopback(site: Site, page: Any) -> None:
    with viewer(site.root, "--host", "0.0.0.0") as url:
        token = url.split("?token=")[1]
        port = url.split(":")[2].split("/")[0]
        local = f"http://127.0.0.1:{port}"
        refused = page.goto(local + "/")
        assert refused.status == 401 and "access token" in page.locator("body").inner_text()
        page.goto(f"{local}/?token={token}")
        assert page.url == local + "/" and page.locator("h1").inner_text() == "Runs"
        assert page.goto(local + "/compare").status == 200  # the cookie carries the token from now on


def test_screenshots_of_each_page(site: Site, page: Any, tmp_path: Path) -> None:
    target = Path(os.environ.get("NICEEVAL_SCREENSHOTS", tmp_path))
    target.mkdir(parents=True, exist_ok=True)
    shots = {
        "runs": "/",
        "run": f"/runs/{site.after}",
        "eval-run": f"/runs/{site.after}/eval?id=evals/shop.py::refund",
        "compare": f"/compare?base={site.before}&head={site.after}",
        "compare-eval": f"/compare/eval?base={site.before}&head={site.after}&id=evals/shop.py::refund",
        "history": "/evals/history?id=evals/shop.py::refund",
        "cases": "/cases",
        "case-form": "/cases/new",
    }
    for name, path in shots.items():
        assert page.goto(site.url + path).status == 200, path
        page.screenshot(path=str(target / f"viewer-{name}.png"), full_page=True)
    assert sorted(p.name for p in target.glob("viewer-*.png")) == sorted(f"viewer-{n}.png" for n in shots)
    assert page.csp == []
