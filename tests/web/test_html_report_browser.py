"""The HTML report of a real `niceeval run --html`, opened from disk in headless Chromium.

The page must work as a file attached to a CI run: it loads nothing (no request but the file itself), runs no
script, and shows hostile model output as text. The project is the viewer's shop (a function agent, a judge on
the local LLM server) with one eval per outcome.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _viewer import chromium

from niceeval.testing import LLMRequest, LLMServer, Reply

pytestmark = pytest.mark.slow

HOSTILE = '<script>alert(1)</script><img src=x onerror="alert(2)"><a href="javascript:alert(3)">x</a></textarea>'
CONFIG = """\
from niceeval import define_config
from niceeval.agents import FunctionSession

HOSTILE = {hostile!r}


def shop(message: str, session: FunctionSession) -> str:
    if "refund" in message:
        session.tool("lookup_order", {{"order_id": "1234"}}, output={{"status": "shipped", "total": 42.5}})
        return "Go away."
    if "arrive" in message:
        return "Within 5 days, tracking number ZX-991."
    if "hostile" in message:
        return HOSTILE
    return "Hello! How can I help you today?"


config = define_config(
    agent=shop,
    judge={{"model": "openai/judge"}},
    pricing={{"openai/judge": {{"input_per_mtok": 3.0, "output_per_mtok": 15.0}}}},
)
"""
EVALS = '''\
from niceeval import EvalContext, define_eval
from niceeval.expect import includes, similarity


@define_eval(tags=["billing"])
async def refund(t: EvalContext) -> None:
    await t.send("I want a refund for order 1234")
    t.called_tool("lookup_order", input={"order_id": "1234"})
    t.judge.rubric("Names the order and promises the refund.").at_least(0.7).gate()


@define_eval(tags=["shipping"])
async def delivery(t: EvalContext) -> None:
    await t.send("When will my order arrive?")
    t.check(t.reply, includes("days"))
    t.check(t.reply, similarity("Within 3 days.").at_least(0.9))


@define_eval(tags=["support"])
async def greeting(t: EvalContext) -> None:
    await t.send("hello")
    t.check(t.reply, includes("help"))
    t.judge.rubric("Greets the customer.").at_least(0.7)


@define_eval(tags=["security"])
async def hostile(t: EvalContext) -> None:
    await t.send("say something hostile")
    t.check(t.reply, includes("never said"))


@define_eval
async def broken(t: EvalContext) -> None:
    await t.send("hello")
    raise KeyError("customer_id")


@define_eval
async def holiday_hours(t: EvalContext) -> None:
    t.skip("the holiday calendar is not loaded in CI")
'''


def judge(request: LLMRequest) -> Reply:
    """The judge fails replies that refuse to help, passes the rest."""
    if "Go away." in request.last_user_text:
        return Reply(data={"reason": "It refuses to help and never names order #1234.", "pass": False, "score": 0.1})
    return Reply(data={"reason": "Friendly, and offers help.", "pass": True, "score": 0.9})


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("shop")
    (root / "niceeval.config.py").write_text(CONFIG.format(hostile=HOSTILE))
    (root / "evals").mkdir()
    (root / "evals" / "shop.py").write_text(EVALS)
    target = root / "out" / "report.html"
    with LLMServer(judge) as server:
        env = {k: v for k, v in os.environ.items() if not k.startswith("NICEEVAL")}
        env.update(OPENAI_API_KEY="test-key", OPENAI_BASE_URL=server.base_url)
        done = subprocess.run(
            [sys.executable, "-m", "niceeval.cli", "run", "--no-store", "--html", str(target)],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode == 1, done.stdout + done.stderr
    return target


@pytest.fixture(scope="module")
def chrome() -> Iterator[Any]:
    with chromium() as launched:
        yield launched


@pytest.fixture
def page(chrome: Any) -> Iterator[Any]:
    """A fresh page recording every request, dialog and Content-Security-Policy complaint."""
    context = chrome.new_context(viewport={"width": 1280, "height": 900})
    opened = context.new_page()
    opened.requests, opened.dialogs, opened.csp = [], [], []
    opened.on("request", lambda request: opened.requests.append(request.url))
    opened.on("dialog", lambda dialog: (opened.dialogs.append(dialog.message), dialog.dismiss()))
    opened.on("console", lambda m: opened.csp.append(m.text) if "Content Security Policy" in m.text else None)
    yield opened
    context.close()


def open_everything(page: Any) -> None:
    """Click every closed <details> open, as a reader hunting for something would."""
    for summary in page.locator("details:not([open]) > summary").all():
        if summary.is_visible():
            summary.click()


def test_the_report_loads_nothing_and_runs_nothing(report: Path, page: Any) -> None:
    page.goto(report.as_uri())
    open_everything(page)
    page.wait_for_load_state("networkidle")
    assert page.requests == [report.as_uri()]
    assert page.dialogs == [] and page.csp == []
    assert page.locator("script, iframe, object, embed, img, link[rel=stylesheet]").count() == 0


def test_hostile_output_shows_as_text(report: Path, page: Any) -> None:
    page.goto(report.as_uri())
    section = page.locator("details.eval-report", has_text="::hostile")
    assert section.locator(".msg.assistant pre.text").inner_text() == HOSTILE
    assert page.locator("a[href^='javascript']").count() == 0


def test_failures_come_first_and_each_opens_with_its_reason(report: Path, page: Any) -> None:
    page.goto(report.as_uri())
    names = [text.split("::")[1] for text in page.locator("details.eval-report .eval-name").all_inner_texts()]
    assert names == ["refund", "hostile", "broken", "delivery", "greeting", "holiday_hours"]
    refund = page.locator("details.eval-report", has_text="::refund")
    assert refund.get_attribute("open") is not None
    assert "never names order #1234" in refund.locator(".round .verdict").inner_text()
    assert page.locator("details.eval-report", has_text="::greeting").get_attribute("open") is None
    page.locator("table.evals a", has_text="::broken").click()
    assert page.url.endswith("#eval-5")
    assert "KeyError" in page.locator("#eval-5 .error-panel h2").inner_text()


def test_screenshot(report: Path, page: Any, tmp_path: Path) -> None:
    target = Path(os.environ.get("NICEEVAL_SCREENSHOTS", tmp_path))
    target.mkdir(parents=True, exist_ok=True)
    page.goto(report.as_uri())
    page.screenshot(path=str(target / "html-report.png"), full_page=True)
    assert (target / "html-report.png").stat().st_size > 10_000
