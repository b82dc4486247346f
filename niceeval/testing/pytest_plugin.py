"""The `llm_server` pytest fixture; load it with `pytest_plugins = ["niceeval.testing.pytest_plugin"]`."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from niceeval.testing._server import LLMServer


@pytest.fixture
def llm_server() -> Iterator[LLMServer]:
    """A started `LLMServer` with an empty script, stopped after the test.

    Script it inside the test with `llm_server.push(...)`, `llm_server.set_script(...)`,
    `llm_server.faults = ...` or `llm_server.latency = ...`.
    """
    with LLMServer() as server:
        yield server
