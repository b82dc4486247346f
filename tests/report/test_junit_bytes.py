"""The JUnit report's bytes: each testcase written as text is what ElementTree wrote for it, hostile text too."""

from __future__ import annotations

import math
import random
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from niceeval import AssertionResult, RunResult
from niceeval._core.errors import ErrorInfo
from niceeval._core.results import Spend
from niceeval._core.summary import EvalTally, PlannedEval, Problem, SuiteSummary
from niceeval.report import JUnitReporter
from niceeval.report._xml import element, legal, text

HOSTILE = 'say "hi" & <b>it</b> ]]> \x01\x1b[2J\x7f \r\n\t \u2028\u2029 \U0001f600 \ufeff \ud800 end'
"""Quotes, markup, a CDATA end, control characters (XML forbids some even escaped), CR/LF/TAB, the JavaScript line
separators, a character outside the BMP, a byte order mark and a lone surrogate."""
GOLDEN = Path(__file__).parent / "data" / "junit_hostile.xml"
"""Written by the ElementTree serialiser this report used before (niceeval 43b6e8d) for `_runs()`."""


def _missed(text: str, score: float) -> AssertionResult:
    return AssertionResult(
        name=f"rubric {text}", severity="soft", score=score, threshold=0.7, state="failed", reason=text,
        expected=text, actual=text, location="evals/x.py:9",
    )  # fmt: skip


def _runs() -> list[RunResult]:
    base = {"file": "evals/x.py", "line": 3, "duration_s": 0.5}
    return [
        RunResult(eval_id=f"evals/x.py::quoted[{HOSTILE}]", outcome="failed", assertions=[_missed(HOSTILE, 0.25)],
                  warnings=[HOSTILE], agent_spend=Spend(calls=1, tokens=9, cost=0.001), **base),
        RunResult(eval_id="evals/x.py::nan", outcome="scored", assertions=[_missed("odd", math.nan)], **base),
        RunResult(eval_id="evals/x.py::broken", outcome="failed", failure="infra", attempts=3,
                  error=ErrorInfo(type="KeyError", message=HOSTILE, traceback=HOSTILE, location="evals/x.py:4"),
                  **base),
        RunResult(eval_id="evals/x.py::later", outcome="skipped", skip_reason=HOSTILE, **base),
        RunResult(eval_id="evals/x.py::empty", outcome="failed", **base),
        RunResult(eval_id="evals/x.py::graded", outcome="passed", points=2.0, points_possible=3.0,
                  judge_spend=Spend(calls=2, tokens=40, cost=None, cached=1, unpriced=["m"]), **base),
        RunResult(eval_id="evals/x.py::twice", outcome="passed", **base),
        RunResult(eval_id="evals/x.py::twice", outcome="failed", run_index=1,
                  assertions=[_missed("\U0001f600\x00", 0.0)], **base),
    ]  # fmt: skip


def _write(path: Path, *, min_pass_rate: float) -> None:
    runs = _runs()
    ids = list(dict.fromkeys(r.eval_id for r in runs))
    plan = [PlannedEval(id=i, file="evals/x.py", line=3, runs=1 + i.endswith("twice")) for i in ids]
    problems = [Problem(location=f"evals/{HOSTILE}.py:1", message=HOSTILE * 40)]
    tallies = {p.id: EvalTally(eval=p) for p in plan}
    reporter = JUnitReporter(path, min_pass_rate=min_pass_rate)
    reporter.start(plan, problems)
    for run in runs:
        tallies[run.eval_id].add(run)
        reporter.run_finished(run)
    summary = SuiteSummary.of(
        list(tallies.values()), problems=problems, duration_s=1.25, strict=False, min_pass_rate=min_pass_rate
    )
    reporter.finish(summary)


def test_junit_bytes_are_elementtrees_for_hostile_text(tmp_path: Path) -> None:
    written = []
    for min_pass_rate in (1.0, 0.5):  # failures; then the twice-run eval's miss tolerated, as <system-out>
        _write(tmp_path / "j.xml", min_pass_rate=min_pass_rate)
        written.append((tmp_path / "j.xml").read_bytes())
    assert b"\n".join(written) == GOLDEN.read_bytes()
    assert len(ET.fromstring(written[0]).findall("testsuite/testcase")) == 9  # eight runs and the load problem


ALPHABET = "ab \"'&<>]]>\r\n\t\x00\x01\x0b\x1f\x7f\x85\u2028\ud800\udfff\ufffe\uffff\ufeff\U0001f600é"


def _reference(tag: str, attributes: list[tuple[str, str]], content: str) -> str:
    """What ElementTree writes for the element (the characters XML cannot hold replaced first)."""
    made = ET.Element(tag, {name: legal(value) for name, value in attributes})
    made.text = legal(content)
    return ET.tostring(made, encoding="unicode")


@pytest.mark.parametrize("seed", range(20))
def test_an_element_is_written_as_elementtree_writes_it(seed: int) -> None:
    pick = random.Random(seed)

    def noise() -> str:
        return "".join(pick.choice(ALPHABET) for _ in range(pick.randrange(0, 12)))

    for _ in range(50):
        attributes = [(f"a{n}", noise()) for n in range(pick.randrange(0, 4))]
        content = noise()
        assert element("case", attributes, text(content)) == _reference("case", attributes, content)
