"""Secrets never reach the store: credential-shaped text and credential-named fields are scrubbed before writing."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import text

from niceeval import AssertionResult, RunResult
from niceeval._core.assertion import JudgeCall
from niceeval._core.errors import ErrorInfo
from niceeval._core.events import ActionCalledEvent, MessageEvent
from niceeval.store import Store, SuiteRunStart

from .test_store import planned, recording

KEY = "sk-proj-Zq8vN2xLmK4pR7tY1wE3uI9oA"


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    with Store.open(store_url) as opened:
        yield opened


def leaky() -> RunResult:
    return RunResult(
        eval_id="e",
        file="evals/a.py",
        line=1,
        outcome="failed",
        duration_s=0.1,
        error=ErrorInfo(type="AuthenticationError", message=f"Incorrect API key provided: {KEY}"),
        assertions=[
            AssertionResult(
                name="rubric", severity="soft", score=0.5, threshold=0.7, state="failed",
                judge_calls=[JudgeCall(model="openai/x", messages=[{"role": "user", "content": f"key is {KEY}"}])],
            )
        ],  # fmt: skip
        events=[
            MessageEvent(role="user", text="call the API", seq=0),
            ActionCalledEvent(
                name="http_get",
                input={"url": "https://api.example", "headers": {"Authorization": "Bearer eyJhbGciOiJIUzI1NiJ9.x"}},
                output={"echo": {"api_key": "short"}},
                seq=1,
            ),
            MessageEvent(role="assistant", text=f"done with token={KEY}", seq=2),
        ],
    )


def stored_text(store: Store) -> str:
    with store.engine.connect() as conn:
        tables = ("eval_runs", "assertions", "judge_calls", "events", "turns")
        return " ".join(str(list(conn.execute(text(f"select * from {t}")))) for t in tables)


def test_credentials_are_scrubbed_from_every_table(store: Store) -> None:
    with recording(store) as recorder:
        recorder.begin(SuiteRunStart(id="s"), planned("e"))
        recorder.add("s", [leaky()])
    everything = stored_text(store)
    assert KEY not in everything
    assert "eyJhbGciOiJIUzI1NiJ9" not in everything
    assert "short" not in everything  # a credential-named field, whatever its value looks like
    assert "[redacted]" in everything


def test_scrubbing_keeps_the_rest_of_the_record(store: Store) -> None:
    with recording(store) as recorder:
        recorder.begin(SuiteRunStart(id="s"), planned("e"))
        recorder.add("s", [leaky()])
    back = store.eval_run("s", "e")
    assert back.error is not None and back.error.message == "Incorrect API key provided: [redacted]"
    assert back.events[1].input == {  # type: ignore[union-attr]
        "url": "https://api.example", "headers": {"Authorization": "[redacted]"}
    }  # fmt: skip
    assert back.events[2].text == "done with token=[redacted]"  # type: ignore[union-attr]


def test_a_clean_run_is_stored_unchanged(store: Store) -> None:
    clean = RunResult(
        eval_id="e", file="evals/a.py", line=1, outcome="passed", duration_s=0.1,
        events=[MessageEvent(role="assistant", text="The bearer of the token is Ann; the secret is kindness.", seq=0)],
    )  # fmt: skip
    with recording(store) as recorder:
        recorder.begin(SuiteRunStart(id="s"), planned("e"))
        recorder.add("s", [clean])
    assert store.eval_run("s", "e") == clean
