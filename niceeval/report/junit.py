"""The JUnit XML reporter, for CI systems: one testcase per run.

`failed` -> <failure>, `scored` -> <failure> only under --strict, `skipped` -> <skipped>, load and usage
problems -> a testcase with <error>. Testcases are spooled as they finish; the file is written at the end.
"""

from __future__ import annotations

import os
import re
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path
from typing import IO

from niceeval._core.results import RunResult
from niceeval._core.summary import PlannedEval, Problem, SuiteSummary

# Characters XML 1.0 forbids even escaped; model output may contain them.
_ILLEGAL_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _xml_text(text: str) -> str:
    return _ILLEGAL_XML.sub("\ufffd", text)


def _describe_misses(result: RunResult) -> str:
    lines = []
    if result.error is not None:
        where = f" at {result.error.location}" if result.error.location else ""
        lines.append(f"error {result.error.type}: {result.error.message}{where}\n{result.error.traceback}")
    for a in result.assertions:
        if a.state == "failed":
            score = "n/a" if a.score is None else f"{a.score:.2f}"
            lines.append(f"[{a.severity}] {a.name}: score {score} < {a.threshold:.2f} at {a.location}")
            for label, value in (("expected", a.expected), ("actual", a.actual), ("reason", a.reason)):
                if value:
                    lines.append(f"    {label}: {value}")
    return "\n".join(lines)


class JUnitReporter:
    """Writes JUnit XML to `path`."""

    def __init__(self, path: Path, *, strict: bool = False) -> None:
        self.path = path
        self.strict = strict
        self._spool: IO[str] | None = None
        self._runs_per_eval = 1
        self._counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}

    def start(self, plan: Sequence[PlannedEval], problems: Sequence[Problem]) -> None:
        self._spool = tempfile.TemporaryFile("w+", encoding="utf-8")
        self._runs_per_eval = plan[0].runs if plan else 1

    def run_finished(self, result: RunResult) -> None:
        assert self._spool is not None
        name = result.eval_id.split("::", 1)[-1]
        if self._runs_per_eval > 1:
            name += f"[run {result.run_index + 1}]"
        case = ET.Element(
            "testcase",
            name=_xml_text(name),
            classname=_xml_text(result.file.removesuffix(".py").replace("/", ".")),
            file=_xml_text(result.file),
            line=str(result.line),
            time=f"{result.duration_s:.6f}",
        )
        self._counts["tests"] += 1
        if result.outcome == "failed" or (result.outcome == "scored" and self.strict):
            self._counts["failures"] += 1
            first = next((a for a in result.assertions if a.state == "failed"), None)
            message = (
                f"{result.error.type}: {result.error.message}"
                if result.error
                else f"{first.name} missed" if first else result.outcome
            )
            failure = ET.SubElement(case, "failure", message=_xml_text(message[:500]), type=result.outcome)
            failure.text = _xml_text(_describe_misses(result))
        elif result.outcome == "skipped":
            self._counts["skipped"] += 1
            ET.SubElement(case, "skipped", message=_xml_text(result.skip_reason or ""))
        elif result.outcome == "scored":
            out = ET.SubElement(case, "system-out")
            out.text = _xml_text("scored (soft misses):\n" + _describe_misses(result))
        self._spool.write(ET.tostring(case, encoding="unicode"))

    def finish(self, summary: SuiteSummary) -> None:
        assert self._spool is not None
        for problem in summary.problems:
            if problem.kind != "load":
                continue  # API misuse inside an eval is already that run's <failure>
            case = ET.Element("testcase", name=_xml_text(problem.location), classname="niceeval.load")
            error = ET.SubElement(case, "error", message=_xml_text(problem.message[:500]))
            error.text = _xml_text(problem.message)
            self._spool.write(ET.tostring(case, encoding="unicode"))
            self._counts["tests"] += 1
            self._counts["errors"] += 1
        attrs = " ".join(f'{k}="{v}"' for k, v in self._counts.items())
        self.path.parent.mkdir(parents=True, exist_ok=True)
        partial = self.path.with_name(self.path.name + ".partial")
        try:
            with partial.open("w", encoding="utf-8") as out:
                out.write('<?xml version="1.0" encoding="utf-8"?>\n')
                out.write(f'<testsuites {attrs} time="{summary.duration_s:.6f}">\n')
                out.write(f'<testsuite name="niceeval" {attrs} time="{summary.duration_s:.6f}">')
                self._spool.seek(0)
                while chunk := self._spool.read(1 << 16):
                    out.write(chunk)
                out.write("</testsuite>\n</testsuites>\n")
            os.replace(partial, self.path)
        finally:
            partial.unlink(missing_ok=True)
            self._spool.close()
