"""The HTML report: one self-contained page with the summary, every eval (failures first) and each run in full.

Pages are parsed with the standard library's HTML parser and read as a browser's DOM would be: by element and
class, never by matching markup strings.
"""

from __future__ import annotations

import gc
import subprocess
import sys
import weakref
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from test_reporters import drive, miss, result

from niceeval._core.assertion import AssertionResult, JudgeCall
from niceeval._core.errors import ErrorInfo
from niceeval._core.events import ActionCalledEvent, MessageEvent
from niceeval._core.results import RunResult
from niceeval._core.summary import EvalTally, PlannedEval, SuiteSummary
from niceeval.report.html import HtmlReporter

HOSTILE = (
    '<script>alert("x")</script><img src=x onerror="alert(1)"><a href="javascript:alert(2)">click</a>'
    "</textarea><script>alert(3)</script></pre><svg onload=alert(4)>"
)
ODD = "a\ud800b \x00 \x1b[2J \udfff end"
_VOID = {"meta", "link", "br", "img", "input", "hr", "wbr", "source", "col", "area", "base", "embed"}


@dataclass
class Node:
    tag: str
    attrs: dict[str, str]
    children: list[Node | str] = field(default_factory=list)

    def all(self, tag: str | None = None, cls: str | None = None) -> list[Node]:
        """Every element below this one (document order) with `tag` and/or the class `cls`."""
        found = []
        for child in self.children:
            if isinstance(child, Node):
                classes = child.attrs.get("class", "").split()
                if (tag is None or child.tag == tag) and (cls is None or cls in classes):
                    found.append(child)
                found += child.all(tag, cls)
        return found

    def one(self, tag: str | None = None, cls: str | None = None) -> Node:
        found = self.all(tag, cls)
        assert found, f"no <{tag or '*'} class={cls}> in <{self.tag} {self.attrs}>"
        return found[0]

    @property
    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text for c in self.children)

    @property
    def words(self) -> str:
        return " ".join(self.text.split())


class _Builder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#document", {})
        self.stack = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, {k: v or "" for k, v in attrs})
        self.stack[-1].children.append(node)
        if tag not in _VOID:
            self.stack.append(node)

    def handle_endtag(self, tag: str) -> None:
        assert self.stack[-1].tag == tag, f"</{tag}> closes <{self.stack[-1].tag}>"
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        self.stack[-1].children.append(data)


def parse(path: Path) -> Node:
    """The page as a tree; every element must be closed where it was opened (the page is well formed)."""
    builder = _Builder()
    builder.feed(path.read_bytes().decode("utf-8"))  # strict UTF-8: no surrogate survives
    builder.close()
    assert [n.tag for n in builder.stack] == ["#document"], "unclosed elements"
    return builder.root


def report(tmp_path: Path, runs: list[RunResult], **options: Any) -> Node:
    path = tmp_path / "report.html"
    drive(HtmlReporter(path, run_id="abc123def456"), runs, **options)
    return parse(path)


def section(page: Node, eval_id: str) -> Node:
    found = [s for s in page.all("details", "eval-report") if s.one(cls="eval-name").text == eval_id]
    assert len(found) == 1, [s.one(cls="eval-name").text for s in page.all("details", "eval-report")]
    return found[0]


def judge_result(reply: str) -> AssertionResult:
    prompt = [
        {"role": "system", "content": "You grade replies."},
        {"role": "user", "content": f"<output>{reply}</output> Is it polite?"},
    ]
    call = JudgeCall(model="openai/judge", messages=prompt, score=0.2, passed=False, reason="Rude: it says go away.")
    return AssertionResult(
        name="rubric('Is it polite?')", severity="soft", score=0.2, threshold=0.7, state="failed",
        reason="Rude: it says go away.", location="evals/x.py:9", judge_calls=[call],
    )  # fmt: skip


def conversation_run(eval_id: str = "a::talk") -> RunResult:
    tool = ActionCalledEvent(name="lookup_order", input={"order_id": "1234"}, output={"status": "shipped"})
    events = [
        MessageEvent(role="user", text="Where is order 1234?"),
        tool,
        MessageEvent(role="assistant", text="Go away."),
        MessageEvent(role="user", text="Please?"),
        MessageEvent(role="assistant", text="It ships Monday."),
    ]
    return result(eval_id, "scored", events=events, assertions=[judge_result("Go away.")])


def test_the_summary_counts_evals_by_status_with_pass_rate_duration_spend_and_run_id(tmp_path: Path) -> None:
    page = report(tmp_path, [result("a::ok", "passed"), result("a::bad", "failed", assertions=[miss("x")])])
    stats = {s.one(cls="label").words: s.one(cls="value").words for s in page.all(cls="stat")}
    assert stats == {
        "Pass rate": "50%", "Passed": "1", "Scored": "0", "Failed": "1", "Skipped": "0", "Duration": "1.2 s",
        "Agent spend": "$0", "Judge spend": "$0",
    }  # fmt: skip
    assert "abc123def456" in page.one("h1").text
    assert page.one(cls="verdict-banner").words == "failed 1 of 2 evals failed. exit code 1"


def test_evals_are_listed_failures_first_then_scored_passed_and_skipped(tmp_path: Path) -> None:
    runs = [
        result("a::skipped", "skipped", skip_reason="later"),
        result("a::passed", "passed"),
        result("a::scored", "scored", assertions=[miss("similarity", "soft")]),
        result("a::failed", "failed", assertions=[miss("includes('x')")]),
    ]
    page = report(tmp_path, runs)
    index = [row.one("a").text for row in page.one("table", "evals").one("tbody").all("tr")]
    sections = [s.one(cls="eval-name").text for s in page.all("details", "eval-report")]
    assert index == sections == ["a::failed", "a::scored", "a::passed", "a::skipped"]
    anchors = [row.one("a").attrs["href"] for row in page.one("table", "evals").one("tbody").all("tr")]
    assert anchors == ["#" + s.attrs["id"] for s in page.all("details", "eval-report")]
    opened = [s.one(cls="eval-name").text for s in page.all("details", "eval-report") if "open" in s.attrs]
    assert opened == ["a::failed", "a::scored"]


def test_the_index_names_the_first_miss_of_each_eval(tmp_path: Path) -> None:
    runs = [result("a::bad", "failed", assertions=[miss("includes('x')")]),
            result("a::crash", "failed", error=ErrorInfo(type="KeyError", message="'id'"))]  # fmt: skip
    page = report(tmp_path, runs)
    misses = [row.one(cls="error-line").words for row in page.one("table", "evals").one("tbody").all("tr")]
    assert misses == ["includes('x'): score 0.00 < 1.00", "KeyError: 'id'"]


def test_each_assertion_shows_name_severity_score_threshold_state_reason_expected_actual_and_location(
    tmp_path: Path,
) -> None:
    page = report(tmp_path, [result("a::bad", "failed", assertions=[miss("includes('x')", actual="hello")])])
    shown = page.one("details", "assertion")
    assert shown.one("summary").words == "failed includes('x') gate score 0.00 / threshold 1.00 evals/x.py:3"
    fields = dict(zip([d.words for d in shown.all("dt")], [d.words for d in shown.all("dd")], strict=True))
    assert fields == {"reason": "nope", "expected": "something", "actual": "hello"}


def test_the_conversation_is_shown_round_by_round_with_tool_calls(tmp_path: Path) -> None:
    page = report(tmp_path, [conversation_run()])
    rounds = page.all("section", "round")
    assert [r.one(cls="round-no").text for r in rounds] == ["Round 1", "Round 2"]
    assert rounds[0].one(cls="user").one("pre").text == "Where is order 1234?"
    assert rounds[0].one(cls="assistant").one("pre").text == "Go away."
    tool = rounds[0].one("details", "action")
    assert tool.one("summary").words == "tool lookup_order success"
    assert [p.words for p in tool.all("pre")] == ['{ "order_id": "1234" }', '{ "status": "shipped" }']
    assert rounds[1].one(cls="assistant").one("pre").text == "It ships Monday."


def test_judge_reasoning_is_shown_under_its_round_and_the_prompt_sent_is_collapsed(tmp_path: Path) -> None:
    page = report(tmp_path, [conversation_run()])
    first_round = page.all("section", "round")[0]
    assert "Rude: it says go away." in first_round.one(cls="verdict").words
    prompt = page.one("details", "prompt")
    assert "open" not in prompt.attrs
    assert [p.text for p in prompt.all("pre")] == ["You grade replies.", "<output>Go away.</output> Is it polite?"]


def test_an_error_shows_its_type_message_location_and_traceback(tmp_path: Path) -> None:
    error = ErrorInfo(type="KeyError", message="'customer_id'", location="evals/x.py:7",
                      traceback='  File "evals/x.py", line 7, in broken\nKeyError: \'customer_id\'')  # fmt: skip
    panel = report(tmp_path, [result("a::crash", "failed", error=error)]).one("section", "error-panel")
    assert panel.one("h2").text == "Exception: KeyError"
    assert panel.one("p", "error-message").text == "'customer_id'"
    assert "evals/x.py:7" in panel.words
    assert panel.one("details").one("pre").text == error.traceback


def test_runs_of_an_eval_are_shown_in_order_folded_below_their_misses(tmp_path: Path) -> None:
    runs = [result("a::flaky", "failed", index=1, assertions=[miss("x")]), result("a::flaky", "passed", index=0)]
    page = report(tmp_path, runs, n_runs=2)
    shown = page.all("details", "run-report")
    assert [r.one("summary").words for r in shown] == ["passed Run 1 of 2 500 ms", "failed Run 2 of 2 500 ms"]
    assert ["open" in r.attrs for r in shown] == [False, False]
    assert [m.one(cls="miss-head").words for m in page.all("div", "miss")] == [
        "run 2 x gate score 0.00 < 1.00 evals/x.py:3"
    ]
    assert page.one(cls="eval-meta").words.startswith("evals/x.py:1 1/2 runs passed (50%)")


def test_a_miss_repeated_by_several_runs_is_listed_once_with_the_runs_it_hit(tmp_path: Path) -> None:
    crash = ErrorInfo(kind="exception", type="KeyError", message="'id'", location="evals/x.py:7")
    runs = [
        result("a::flaky", "failed", index=2, assertions=[miss("x")]),
        result("a::flaky", "failed", index=0, assertions=[miss("x"), miss("y", "soft", actual="maybe")]),
        result("a::flaky", "failed", index=1, error=crash, assertions=[miss("x")]),
        result("a::flaky", "passed", index=3),
    ]
    eval_section = section(report(tmp_path, runs, n_runs=4), "a::flaky")
    misses = eval_section.one("section", "grouped-misses")
    assert misses.one("h3").words == "Misses 3 distinct over 4 runs; each run in full below"
    assert [m.one(cls="miss-head").words for m in misses.all("div", "miss")] == [
        "runs 1-3 (3×) x gate score 0.00 < 1.00 evals/x.py:3",
        "run 1 y soft score 0.00 < 1.00 evals/x.py:3",
        "run 2 Exception: KeyError 'id' evals/x.py:7",
    ]
    assert [m.attrs["class"] for m in misses.all("div", "miss")] == ["miss failed", "miss scored", "miss failed"]
    fields = misses.all("div", "miss")[1].one("dl")
    assert [n.text for n in fields.all("dt")] == ["expected", "actual", "reason"]
    assert [n.text for n in fields.all("dd")] == ["something", "maybe", "nope"]
    # each run's own assertions are still there, folded: the miss is printed once open, not once per run
    assert len(eval_section.all("details", "run-report")) == 4
    assert all("open" not in r.attrs for r in eval_section.all("details", "run-report"))


def test_an_eval_without_model_calls_costs_0_as_in_the_viewer(tmp_path: Path) -> None:
    page = report(tmp_path, [result("a::free", "passed")])
    (row,) = page.one("table", "evals").one("tbody").all("tr")
    assert [cell.words for cell in row.all("td")][4] == "$0"


def test_a_single_run_has_no_grouped_misses(tmp_path: Path) -> None:
    page = report(tmp_path, [result("a::once", "failed", assertions=[miss("x")])])
    assert page.all("section", "grouped-misses") == []
    assert "open" in page.one("details", "assertion").attrs


def test_an_eval_the_pass_rate_tolerates_is_scored_and_the_suite_passes(tmp_path: Path) -> None:
    path = tmp_path / "report.html"
    runs = [result("a::flaky", "passed", index=0), result("a::flaky", "failed", index=1, assertions=[miss("x")])]
    plan = [PlannedEval(id="a::flaky", file="evals/x.py", line=1, runs=2)]
    tally = EvalTally(eval=plan[0])
    reporter = HtmlReporter(path)
    reporter.start(plan, [])
    for run in runs:
        tally.add(run)
        reporter.run_finished(run)
    reporter.finish(SuiteSummary.of([tally], problems=[], duration_s=1.0, strict=False, min_pass_rate=0.5))
    page = parse(path)
    assert section(page, "a::flaky").one(cls="badge").text == "scored"
    assert page.one(cls="verdict-banner").one(cls="badge").text == "passed"


def test_under_strict_a_scored_run_fails_its_eval(tmp_path: Path) -> None:
    page = report(tmp_path, [result("a::soft", "scored", assertions=[miss("similarity", "soft")])], strict=True)
    assert section(page, "a::soft").one(cls="badge").text == "failed"
    assert page.one(cls="verdict-banner").words.startswith("failed 1 of 1 eval failed.")


def test_hostile_model_output_is_shown_as_text_everywhere(tmp_path: Path) -> None:
    tool = ActionCalledEvent(name=HOSTILE, input={"q": HOSTILE}, output=HOSTILE, error=HOSTILE, status="failed")
    hostile = result(
        f"evals/x.py::{HOSTILE}", "failed",
        events=[MessageEvent(role="user", text=HOSTILE), tool, MessageEvent(role="assistant", text=HOSTILE)],
        assertions=[miss(HOSTILE, actual=HOSTILE), judge_result(HOSTILE)],
        error=ErrorInfo(type=HOSTILE, message=HOSTILE, location=HOSTILE, traceback=HOSTILE),
    )  # fmt: skip
    page = report(tmp_path, [hostile])
    assert page.all("script") == [] and page.all("img") == [] and page.all("textarea") == []
    assert all(not n.attrs.get("href", "").startswith("javascript") for n in page.all("a"))
    assert not any(key.startswith("on") for n in page.all() for key in n.attrs)
    assert page.one(cls="assistant").one("pre").text == HOSTILE
    assert section(page, f"evals/x.py::{HOSTILE}").one(cls="error-message").text == HOSTILE


def test_control_characters_and_lone_surrogates_become_visible_escapes(tmp_path: Path) -> None:
    page = report(tmp_path, [result(f"a::{ODD}", "failed", events=[MessageEvent(role="assistant", text=ODD)])])
    visible = "a\\ud800b \\x00 \\x1b[2J \\udfff end"
    assert page.one(cls="assistant").one("pre").text == visible
    assert page.one(cls="eval-name").text == f"a::{visible}"


def test_a_huge_reply_is_cut_with_a_note_and_the_file_stays_small(tmp_path: Path) -> None:
    huge = "word " * 2_000_000  # 10 MB
    page = report(tmp_path, [result("a::huge", "failed", events=[MessageEvent(role="assistant", text=huge)])])
    reply = page.one(cls="assistant").one("pre")
    assert reply.one(cls="clipped").text == "… 9,900,000 more characters not shown"
    assert (tmp_path / "report.html").stat().st_size < 200_000


class Unprintable:
    def __repr__(self) -> str:
        raise RuntimeError("no repr")

    __str__ = __repr__


def test_a_run_that_cannot_be_shown_in_full_keeps_its_outcome_and_error_and_says_why(tmp_path: Path) -> None:
    odd = result("a::odd", "failed", error=ErrorInfo(type="E", message="boom"))
    odd.events.append(ActionCalledEvent(name="t", output=Unprintable()))
    page = report(tmp_path, [odd, result("a::fine", "passed")])
    shown = section(page, "a::odd")
    assert shown.one(cls="notice").words.startswith("this run could not be shown in full: RuntimeError")
    assert shown.one(cls="error-message").text == "boom"
    assert section(page, "a::fine").one(cls="badge").text == "passed"


def test_an_interrupted_suite_keeps_its_finished_runs_and_lists_the_rest_as_not_run(tmp_path: Path) -> None:
    path = tmp_path / "report.html"
    plan = [PlannedEval(id="a::done", file="evals/x.py", line=1), PlannedEval(id="a::cut", file="evals/x.py", line=5)]
    tallies = [EvalTally(eval=p) for p in plan]
    reporter = HtmlReporter(path)
    reporter.start(plan, [])
    finished = result("a::done", "passed")
    tallies[0].add(finished)
    reporter.run_finished(finished)
    summary = SuiteSummary.of(tallies, problems=[], duration_s=1.0, strict=False, min_pass_rate=1.0)
    summary.interrupted = True
    reporter.finish(summary)
    page = parse(path)
    assert [s.one(cls="badge").text for s in page.all("details", "eval-report")] == ["passed", "not run"]
    assert page.one(cls="verdict-banner").words.startswith("interrupted Interrupted after 1 of 2 runs")
    assert list(tmp_path.iterdir()) == [path]  # written in place of the `.partial`, which is gone


def test_the_page_loads_nothing_and_forbids_scripts(tmp_path: Path) -> None:
    page = report(tmp_path, [conversation_run()])
    policy = [m.attrs["content"] for m in page.all("meta") if m.attrs.get("http-equiv") == "Content-Security-Policy"]
    assert policy and policy[0].startswith("default-src 'none'; style-src 'sha256-")
    assert page.all("script") == []
    assert [n.attrs["href"][:5] for n in page.all("link")] == ["data:"]  # the icon, inlined
    assert all(n.attrs["href"].startswith("#") for n in page.all("a"))
    assert len(page.all("style")) == 1


def test_the_reporter_keeps_no_run_once_it_is_written_to_the_spool(tmp_path: Path) -> None:
    reporter = HtmlReporter(tmp_path / "report.html")
    reporter.start([PlannedEval(id="a::x", file="evals/x.py", line=1)], [])
    run = conversation_run("a::x")
    seen = weakref.ref(run)
    reporter.run_finished(run)
    del run
    gc.collect()
    assert seen() is None
    reporter.finish(SuiteSummary.of([], problems=[], duration_s=0.1, strict=False, min_pass_rate=1.0))


def test_writing_the_html_report_does_not_import_the_web_server() -> None:
    code = "import sys, niceeval.report.html; print([m for m in sys.modules if m.startswith(('starlette', 'uvicorn'))])"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
