"""A `pattern` is a regular expression, as in `re.search`: a secret scan written as one fires."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from test_sandbox_evals import run

from niceeval import EvalContext, UsageError, define_eval
from niceeval._eval.workspace import not_in_diff
from niceeval.agents import FunctionSession


def writes_a_key(message: str, session: FunctionSession) -> str:
    assert session.workspace is not None
    (session.workspace / "settings.py").write_text("KEY = 'sk-ABCDEFGH12345678'\n")
    return "done"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "fixtures" / "app").mkdir(parents=True)
    (tmp_path / "fixtures" / "app" / "app.py").write_text("VALUE = 1\n")
    return tmp_path


def test_a_string_pattern_is_searched_as_a_regular_expression(root: Path) -> None:
    @define_eval(fixture="fixtures/app", agent=writes_a_key)
    async def ev(t: EvalContext) -> None:
        await t.send("configure")
        t.not_in_diff(r"sk-[A-Za-z0-9]{8,}")

    result = run(ev, root)
    miss = result.assertions[0]
    assert (result.outcome, miss.name, miss.state) == ("failed", "not_in_diff(/sk-[A-Za-z0-9]{8,}/)", "failed")
    assert miss.actual == "'[redacted]'"  # the key found, scrubbed as every value shortened for a report is


def test_re_escape_searches_for_text_literally(root: Path) -> None:
    @define_eval(fixture="fixtures/app", agent=writes_a_key)
    async def ev(t: EvalContext) -> None:
        await t.send("configure")
        t.not_in_diff(re.escape("sk-[A-Za-z0-9]{8,}")).label("the pattern's text")
        t.not_in_diff(re.escape("KEY = 'sk-")).label("the key's text")

    result = run(ev, root)
    assert {a.name: a.state for a in result.assertions} == {"the pattern's text": "passed", "the key's text": "failed"}
    assert result.assertions[1].actual == '"KEY = \'sk-"'


def test_an_invalid_pattern_is_an_author_error_saying_how_to_search_literally(root: Path) -> None:
    @define_eval(fixture="fixtures/app", agent=writes_a_key)
    async def ev(t: EvalContext) -> None:
        t.not_in_diff("price: $5 (")

    result = run(ev, root)
    assert result.error is not None and result.error.kind == "usage"
    assert "'price: $5 (' is not a valid regular expression" in result.error.message
    assert "re.escape(text)" in result.error.message
    assert (result.error.location or "").endswith(f"test_patterns.py:{ev.line + 2}")


def test_a_pattern_of_the_wrong_type_is_refused() -> None:
    with pytest.raises(UsageError, match=r"not_in_diff\(\) takes a regular expression"):
        not_in_diff(42)  # type: ignore[arg-type]
