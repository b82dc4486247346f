"""Agent replies holding anything a str can (10 MB, NUL, lone surrogates, ANSI escapes), or bytes that are not UTF-8,
leave every report valid."""

from __future__ import annotations

import pytest

from ._project import Project, Result, make_project

ODD_EVALS = """\
from niceeval import define_eval
from niceeval.expect import includes

ODD = "lone \\ud800 surrogate, nul \\x00, escape \\x1b[2J\\x1b[31m, end"


def odd_agent(message):
    return ODD


def huge_agent(message):
    return "x" * 10_000_000 + ODD


def bytes_agent(message):
    return b"\\xff\\xfe raw"


@define_eval(agent=bytes_agent)
async def bytes_reply(t):
    await t.send("hi")
    t.check(t.reply, includes("never there"))


@define_eval(agent=odd_agent)
async def odd_reply(t):
    await t.send("hi")
    t.check(t.reply, includes("never there"))


@define_eval(agent=huge_agent)
async def huge_reply(t):
    await t.send("hi")
    t.check(t.reply, includes("never there"))


@define_eval
async def plain(t):
    await t.send("hi")
    t.check(t.reply, includes("hi"))
"""

REPLACED = "lone \ufffd surrogate, nul \x00, escape \x1b[2J\x1b[31m, end"


@pytest.fixture(scope="module")
def odd_project(tmp_path_factory: pytest.TempPathFactory) -> Project:
    project = make_project(tmp_path_factory.mktemp("odd"))
    project.write("evals/odd.py", ODD_EVALS)
    return project


@pytest.fixture(scope="module")
def odd(odd_project: Project) -> Result:
    return odd_project.run(timeout=120)


@pytest.mark.slow
def test_every_run_is_in_the_json_report_with_surrogates_replaced(odd: Result) -> None:
    assert odd.code == 1, odd.output
    assert odd.eval("odd_reply")["runs"][0]["events"][1]["text"] == REPLACED
    assert odd.eval("huge_reply")["runs"][0]["events"][1]["text"] == "x" * 10_000_000 + REPLACED
    assert odd.eval("plain")["status"] == "passed"


@pytest.mark.slow
def test_a_reply_of_bytes_that_are_not_utf8_is_kept_with_each_bad_byte_escaped(
    odd: Result, odd_project: Project
) -> None:
    reply = odd.eval("bytes_reply")["runs"][0]["events"][1]
    assert (reply["text"], reply["data"]) == ("b'\\xff\\xfe raw'", "\\xff\\xfe raw")
    shown = odd_project.cli("show", "latest", "evals/odd.py::bytes_reply")  # the store kept it
    assert shown.code == 0, shown.output
    assert "xff" in shown.stdout and "xfe raw" in shown.stdout  # shown as a repr: its backslashes doubled


@pytest.mark.slow
def test_the_junit_report_parses_and_keeps_every_run(odd: Result) -> None:
    names = sorted(c.get("name") or "" for c in odd.junit().iter("testcase"))
    assert names == ["bytes_reply", "huge_reply", "odd_reply", "plain"]


@pytest.mark.slow
def test_the_console_shows_odd_text_inert_and_bounded(odd: Result) -> None:
    assert "\x1b" not in odd.output and "\x00" not in odd.output
    assert "lone \\ud800 surrogate, nul \\x00, escape \\x1b[2J" in odd.stdout
    assert len(odd.stdout) < 20_000  # the 10 MB reply is cut, not printed
