"""Fixtures of the judge tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from judge_helpers import Run

from niceeval.judge._cache import JudgeCache
from niceeval.providers import _limiter
from niceeval.testing import LLMServer


@pytest.fixture(autouse=True)
def fresh_limiters(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test gets its own provider limiters: a 429 test must not slow the next one down."""
    monkeypatch.setattr(_limiter, "_limiters", {})


@pytest.fixture
def run(llm_server: LLMServer) -> Run:
    """A judged run against the `llm_server` fixture, with fast retries and test keys."""
    return Run(server=llm_server)


@pytest.fixture
def cache(tmp_path: Path) -> Iterator[JudgeCache]:
    """A judge cache in a temporary folder, closed after the test."""
    with JudgeCache(tmp_path / ".niceeval" / "judge-cache.sqlite") as opened:
        yield opened
