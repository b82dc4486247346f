"""The eval-run page shows the run's trace as a server-rendered SVG waterfall, lined up with the rounds."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from niceeval._core.spans import SpanRecord
from niceeval.web._waterfall import MAX_ROWS, waterfall
from tests.web._viewer import chromium, viewer

HOSTILE = '<script>alert(1)</script><img src=x onerror="alert(2)">'


def record(span_id: str, parent: str | None, name: str, start: int, end: int, **attributes: Any) -> SpanRecord:
    return SpanRecord(
        trace_id="a" * 32, span_id=span_id, parent_id=parent, name=name, start_ns=start, end_ns=end
    ).model_copy(update={"attributes": attributes})


def test_waterfall_rows_bars_rounds_and_escaping() -> None:
    spans = [
        record("1", "turn1", "invoke_agent", 0, 100, **{"gen_ai.operation.name": "invoke_agent"}),
        record("2", "1", HOSTILE, 10, 40, **{"gen_ai.operation.name": "execute_tool"}),
        record("3", "turn2", "second turn", 200, 300, **{"openinference.span.kind": "LLM"}),
    ]
    spans[1].status = "error"
    markup = str(waterfall(spans))
    assert markup.count('<rect class="bar"') == 3
    assert "round 1" in markup and "round 2" in markup
    assert '<g class="span agent">' in markup and '<g class="span tool failed">' in markup
    assert '<g class="span model">' in markup
    assert "<script>" not in markup and "&lt;script&gt;alert(1)&lt;/script&gt;" in markup
    assert waterfall([]) is None


def test_a_huge_trace_draws_the_first_rows_and_says_how_many_were_left_out() -> None:
    spans = [record(f"{i:x}", "turn", f"s{i}", i, i + 1) for i in range(MAX_ROWS + 25)]
    markup = str(waterfall(spans))
    assert markup.count('<rect class="bar"') == MAX_ROWS and "25 more rows not drawn" in markup


CONFIG = """\
from opentelemetry import trace
from opentelemetry.trace import Status, StatusCode

from niceeval import define_config
from niceeval.agents import traced_agent

tracer = trace.get_tracer("shop")
HOSTILE = {hostile!r}


@traced_agent
def shop(message: str) -> str:
    with tracer.start_as_current_span("invoke_agent shop", attributes={{"gen_ai.operation.name": "invoke_agent"}}):
        with tracer.start_as_current_span("chat") as chat:
            chat.set_attributes({{"gen_ai.operation.name": "chat", "gen_ai.usage.input_tokens": 12}})
        with tracer.start_as_current_span(HOSTILE) as tool:
            tool.set_attributes({{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup"}})
            tool.set_status(Status(StatusCode.ERROR, "not found"))
    return "done"


config = define_config(agent=shop)
"""
EVALS = """\
from niceeval import EvalContext, define_eval


@define_eval
async def traced(t: EvalContext) -> None:
    await t.send("first")
    await t.send("second")
    t.span(kind="tool", count=2)
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    root = tmp_path_factory.mktemp("traced")
    (root / "niceeval.config.py").write_text(CONFIG.format(hostile=HOSTILE))
    (root / "evals").mkdir()
    (root / "evals" / "shop.py").write_text(EVALS)
    done = subprocess.run(
        [sys.executable, "-m", "niceeval.cli", "run", "--json", "out.json"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    run_id = json.loads((root / "out.json").read_text())["run_id"]
    with viewer(root) as url:
        yield url.rstrip("/"), run_id


@pytest.mark.slow
def test_the_eval_run_page_shows_the_waterfall_under_the_csp(site: tuple[str, str], tmp_path: Path) -> None:
    url, run_id = site
    with chromium() as browser:
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        page = context.new_page()
        complaints: list[str] = []
        dialogs: list[str] = []
        page.on("console", lambda m: complaints.append(m.text) if "Content Security Policy" in m.text else None)
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        assert page.goto(f"{url}/runs/{run_id}/eval?id=evals/shop.py::traced").status == 200
        chart = page.locator("svg.waterfall")
        assert chart.count() == 1
        assert chart.locator("rect.bar").count() == 6
        assert chart.locator("g.span.tool.failed").count() == 2
        assert chart.locator("text.round").all_text_contents() == ["round 1", "round 2"]
        assert chart.locator("g.span.tool text").first.text_content() == HOSTILE[:37] + "…"
        assert HOSTILE in (chart.locator("g.span.tool title").first.text_content() or "")
        assert page.locator("h2", has_text="Trace").inner_text().startswith("Trace")
        target = Path(os.environ.get("NICEEVAL_SCREENSHOTS", tmp_path))
        target.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(target / "viewer-eval-run-trace.png"), full_page=True)
        assert (target / "viewer-eval-run-trace.png").stat().st_size > 10_000
        assert complaints == [] and dialogs == []
        context.close()


def test_each_round_has_its_own_time_axis() -> None:
    spans = [record("1", "turn1", "first", 0, 2_000_000), record("2", "turn2", "second", 9_000_000_000, 9_004_000_000)]
    markup = str(waterfall(spans))
    assert ">2.00 ms</text>" in markup and ">4.00 ms</text>" in markup  # not one 9 s axis that squashes both
    assert markup.count('width="644.0"') == 2  # each span fills its round's width
