"""Reports survive any text a model or a tool can return, and never lose a run over one odd value."""

from __future__ import annotations

import io
import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from rich.console import Console
from test_reporters import drive, miss, result

from niceeval._core.errors import ErrorInfo
from niceeval._core.events import MessageEvent
from niceeval._core.results import RunResult
from niceeval.report import ConsoleReporter, JsonReporter, JUnitReporter

# Lone surrogates (what `b"\xff".decode("utf-8", "surrogateescape")` and other lenient decoders leave), NUL and
# a terminal escape.
ODD = "a\ud800b \x00 \x1b[2J \udfff end"


def reply_run(eval_id: str, text: str, **extra: Any) -> RunResult:
    return result(eval_id, "failed", events=[MessageEvent(role="assistant", text=text)], **extra)


def test_json_report_writes_lone_surrogates_as_replacement_characters(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    drive(JsonReporter(path), [reply_run("a::odd", ODD, error=ErrorInfo(type="E", message=ODD))])
    doc = json.loads(path.read_bytes().decode("utf-8"))  # strict UTF-8: no surrogate survives
    run = doc["evals"][0]["runs"][0]
    assert run["events"][0]["text"] == "a\ufffdb \x00 \x1b[2J \ufffd end"
    assert run["error"]["message"] == "a\ufffdb \x00 \x1b[2J \ufffd end"


def test_one_odd_reply_does_not_cost_the_other_runs_their_json(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    drive(JsonReporter(path), [result("a::before", "passed"), reply_run("a::odd", ODD), result("a::after", "passed")])
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert [e["id"] for e in doc["evals"]] == ["a::before", "a::odd", "a::after"]
    assert all(len(e["runs"]) == 1 for e in doc["evals"])


def test_an_eval_id_with_a_lone_surrogate_is_written_as_replacement(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    drive(JsonReporter(path), [result("evals/\udcff.py::x", "passed")])
    assert json.loads(path.read_text(encoding="utf-8"))["evals"][0]["id"] == "evals/\ufffd.py::x"


class Opaque:
    def __repr__(self) -> str:
        return "Opaque(42)"


def test_json_report_writes_a_value_json_cannot_hold_as_its_repr(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    run = result("a::data", "passed", events=[MessageEvent(role="assistant", text="ok", data={"thing": Opaque()})])
    drive(JsonReporter(path), [run])
    assert json.loads(path.read_text())["evals"][0]["runs"][0]["events"][0]["data"] == {"thing": "Opaque(42)"}


def test_a_run_that_cannot_be_written_in_full_keeps_its_outcome_and_says_why(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    loop: dict[str, Any] = {}
    loop["self"] = loop  # no JSON can hold a cycle
    odd = result("a::cycle", "failed", error=ErrorInfo(type="E", message="boom"))
    odd.events.append(MessageEvent(role="assistant", text="x", data=loop))
    drive(JsonReporter(path), [odd, result("a::fine", "passed")])
    doc = json.loads(path.read_text())
    stand_in = doc["evals"][0]["runs"][0]
    assert (stand_in["outcome"], stand_in["error"]["message"]) == ("failed", "boom")
    assert stand_in["report_error"].startswith("this run could not be written in full")
    assert doc["evals"][1]["runs"][0]["outcome"] == "passed"


def test_junit_stays_parseable_with_lone_surrogates_and_control_characters(tmp_path: Path) -> None:
    path = tmp_path / "j.xml"
    drive(JUnitReporter(path), [result(f"a::{ODD}", "failed", assertions=[miss(ODD, actual=ODD)])])
    case = ET.fromstring(path.read_bytes()).find("testsuite/testcase")
    assert case is not None
    assert case.get("name") == "a\ufffdb \ufffd \ufffd[2J \ufffd end"
    failure = case.find("failure")
    assert failure is not None and "actual: a\ufffdb \ufffd \ufffd[2J \ufffd end" in (failure.text or "")


def test_console_shows_lone_surrogates_as_visible_escapes_on_a_strict_utf8_stream() -> None:
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding="utf-8", errors="strict", write_through=True)
    console = Console(file=stream, width=120, force_terminal=False, color_system=None)
    drive(ConsoleReporter(console), [reply_run("a::odd", ODD, error=ErrorInfo(type="E", message=ODD))])
    text = raw.getvalue().decode("utf-8")
    assert "error E: a\\ud800b \\x00 \\x1b[2J \\udfff end" in text
    assert "\x1b" not in text and "\x00" not in text


def test_console_bounds_a_huge_reply_before_escaping_it() -> None:
    out = io.StringIO()
    console = Console(file=out, width=120, force_terminal=False, color_system=None)
    huge = "\x1b" * 10_000_000
    drive(ConsoleReporter(console), [result("a::huge", "failed", error=ErrorInfo(type="E", message=huge))])
    text = out.getvalue()
    assert "(9999600 more chars)" in text
    assert len(text) < 10_000


def test_console_escapes_bidi_controls_so_text_reads_in_its_real_order() -> None:
    out = io.StringIO()
    console = Console(file=out, width=160, force_terminal=False, color_system=None)
    trojan = "access granted\u202e \u2066admin\u2069 \u200f"
    drive(ConsoleReporter(console), [reply_run("a::bidi", trojan, error=ErrorInfo(type="E", message=trojan))])
    text = out.getvalue()
    assert "access granted\\u202e \\u2066admin\\u2069 \\u200f" in text
    assert not any(c in text for c in "\u202e\u2066\u2069\u200f")
