"""The HTML page a run writes as it finishes (`niceeval run --html`) and the page written again from the store
(`niceeval report RUN --html`, `export --html`) show each eval alike, byte for byte (SQLite and PostgreSQL): a
message's data, a tool's input and output, errors. Both show a value as the store keeps it: a model or dataclass
as its fields, a date in ISO 8601, NaN as null, an object JSON cannot hold as its repr."""

from __future__ import annotations

import datetime
import decimal
import enum
import math
import re
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel
from test_html_bounded import store_run, write

from niceeval._core.assertion import AssertionResult
from niceeval._core.errors import ErrorInfo
from niceeval._core.events import ActionCalledEvent, ErrorEvent, MessageEvent
from niceeval._core.results import RunResult
from niceeval.cli._views import export_reports
from niceeval.render._templates import pretty
from niceeval.store import Store


class Order(BaseModel):
    id: int
    item: str
    when: datetime.date
    price: float


@dataclass
class Point:
    x: int
    y: int


class Size(enum.Enum):
    LARGE = "large"


class Opaque:
    """An object JSON cannot hold: shown by its repr, which differs from its str."""

    def __repr__(self) -> str:
        return "<Opaque #1>"

    def __str__(self) -> str:
        return "opaque"


def missed() -> AssertionResult:
    return AssertionResult(name="includes('x')", severity="gate", score=0.0, threshold=1.0, state="failed",
                           reason="nope", location="evals/x.py:3")  # fmt: skip


def conversation(eval_id: str, outcome: str, *, error: ErrorInfo | None = None) -> RunResult:
    """A run whose events hold structured data of every kind an agent may hand over."""
    at = datetime.datetime(2026, 1, 2, 3, 4, 5)
    events = [
        MessageEvent(role="user", text="order?", data={"files": [{"name": "a.txt", "size": 3}]}),
        ActionCalledEvent(id="c1", name="lookup", input={"order": 7, "tags": ("a", "b"), "at": at},
                          output={"status": "shipped", "weight": 1.5, "n": math.nan, "big": 10**20}),
        ActionCalledEvent(id="c2", name="refund", input="order 7", status="failed", error="boom", output=None),
        MessageEvent(role="assistant", text="here", data=Order(id=7, item="café <b>", when=at.date(), price=1.0)),
        MessageEvent(role="assistant", text="more", data={"point": Point(1, 2), "money": decimal.Decimal("1.10"),
                                                          "size": Size.LARGE, "odd": Opaque(), "inf": [math.inf]}),
        MessageEvent(role="assistant", text="not a number", data=math.nan),  # stored as null: no data block
        ErrorEvent(message="tool refund failed", error_type="RefundError"),
    ]  # fmt: skip
    for seq, event in enumerate(events):
        event.seq = seq
    return RunResult(eval_id=eval_id, file="evals/x.py", line=1, outcome=outcome, duration_s=0.5,  # type: ignore[arg-type]
                     events=events, error=error, assertions=[] if outcome == "passed" else [missed()])  # fmt: skip


def eval_sections(page: Path) -> str:
    """The page's eval sections, as written: from the first section to the page's foot."""
    html = page.read_text(encoding="utf-8")
    return html[html.index('<details class="eval-report') : html.index('<footer class="report-foot">')]


def test_a_stored_runs_page_shows_each_eval_as_the_run_wrote_it(store_url: str, tmp_path: Path) -> None:
    runs = [
        conversation("a::passes", "passed"),
        conversation("a::misses", "failed"),
        conversation("a::breaks", "failed", error=ErrorInfo(type="KeyError", message="'id'")),
    ]
    write(tmp_path / "live.html", runs, most_evals=10, run_id="r")
    with Store.open(store_url) as store:
        run_id = store_run(store, runs)
        export_reports(store, run_id, json_path=None, junit_path=None, html_path=tmp_path / "stored.html")
    live, stored = eval_sections(tmp_path / "live.html"), eval_sections(tmp_path / "stored.html")
    assert live == stored
    assert len(re.findall('<details class="eval-report', live)) == 3
    shown = ['"price": 1.0', '"when": "2026-01-02"', '"n": null', '"at": "2026-01-02T03:04:05"', '"x": 1',
             '"odd": "&lt;Opaque #1&gt;"', '"size": "large"']  # fmt: skip
    for text in shown:
        assert live.count(text.replace('"', "&#34;")) == 3, text


def test_a_value_is_shown_as_the_store_keeps_it() -> None:
    assert pretty(Order(id=7, item="x", when=datetime.date(2026, 1, 2), price=1.0)) == (
        '{\n  "id": 7,\n  "item": "x",\n  "when": "2026-01-02",\n  "price": 1.0\n}'
    )
    assert pretty({"p": Point(1, 2), "n": math.nan}) == '{\n  "p": {\n    "x": 1,\n    "y": 2\n  },\n  "n": null\n}'
    assert pretty(Size.LARGE) == "large" and pretty(Opaque()) == "<Opaque #1>" and pretty("as is") == "as is"
    assert pretty(None) == pretty(math.nan) == "\u2013"


def test_a_value_json_cannot_hold_even_by_repr_is_shown_by_its_repr() -> None:
    looped: dict[str, object] = {}
    looped["self"] = looped
    assert pretty(looped) == "{'self': {...}}"
    assert pretty(b"\xff\xfe") == "b'\\xff\\xfe'"
