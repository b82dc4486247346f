"""Fixtures of the dataset tests."""

from __future__ import annotations

import pytest

from niceeval.providers import _limiter


@pytest.fixture(autouse=True)
def fresh_limiters(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test gets its own provider limiters (they belong to one event loop)."""
    monkeypatch.setattr(_limiter, "_limiters", {})


@pytest.fixture(autouse=True)
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """No provider key leaks in from the environment: a judge without one is inconclusive."""
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
