"""`niceeval report` and `export` write the JSON and JUnit reports `niceeval run` wrote, from the store's rows alone."""

from __future__ import annotations

import re

import pytest

from ._project import Project

EVALS = """\
import json

from niceeval import define_eval
from niceeval.expect import includes, similarity


@define_eval
async def steady(t):
    await t.send("hello")
    t.check(t.reply, includes("hello"))


@define_eval
async def vague(t):
    await t.send("abcdefghij")
    t.check(t.reply, similarity("echo: abcdexxxxx").at_least(0.95))


@define_eval
async def broken(t):
    await t.send("order \\u00e9 \\u2028")
    raise KeyError("order")


@define_eval
async def later(t):
    t.skip("needs docker")


@define_eval(points=3, points_to_pass=2)
async def graded(t):
    await t.send("refund #1234")
    t.score(1, "answered at all")
    t.check(t.reply, includes("#1234").points(1))
    t.check(t.reply, includes("within 5 days").points(1))


@define_eval(cases=[{"id": "one", "input": "first"}, {"id": "two", "input": "second"}])
async def cases(t):
    await t.send(t.case["input"])
    t.check(t.reply, includes("first"))
"""


CLOCK = re.compile(r'"(started|finished)_at": "[^"]+"')


def _without_clock(text: str) -> str:
    """The report's text without the times it was written at (a report written later has its own)."""
    return CLOCK.sub("", text)


@pytest.mark.parametrize("runs", ["1", "3"])
def test_report_and_export_write_what_run_wrote(project: Project, store_url: str, runs: str) -> None:
    project.write("evals/mixed.py", EVALS)
    ran = project.run("--store", store_url, "--runs", runs)
    assert ran.code == 1, ran.output
    run_id = ran.report()["run_id"]
    out = project.out
    reported = project.cli(
        "report", run_id, "--json", str(out / "r.json"), "--junit", str(out / "r.xml"), "--store", store_url
    )
    assert reported.code == 1, reported.output
    exported = project.cli(
        "export", run_id, "--json", str(out / "e.json"), "--junit", str(out / "e.xml"), "--store", store_url
    )
    assert exported.code == 0, exported.output
    assert ran.report()["summary"]["runs"] == 7 * int(runs)
    assert ran.json_text is not None and len(CLOCK.findall(ran.json_text)) == 2
    for name in ("r", "e"):  # byte for byte
        assert _without_clock((out / f"{name}.json").read_text(encoding="utf-8")) == _without_clock(ran.json_text)
        assert (out / f"{name}.xml").read_text(encoding="utf-8") == ran.junit_text
