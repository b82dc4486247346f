"""Test LLM apps offline: a local OpenAI- and Anthropic-compatible server that answers from a script.

    from niceeval.testing import LLMServer, fail_first

    with LLMServer(["Paris"], faults=fail_first(1)) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=1)
        ...  # the first request gets a 429, the SDK retries, the retry gets "Paris"

See docs/testing.md. For pytest, put `pytest_plugins = ["niceeval.testing.pytest_plugin"]` in a
`conftest.py` to get the `llm_server` fixture.

Design: docs/design/testing.md
"""

from niceeval.testing._replies import Fault, Reply, ReplyLike, TokenUsage, ToolCall
from niceeval.testing._request import LLMRequest, Message, Tool
from niceeval.testing._script import (
    FaultRule,
    Script,
    ScriptExhaustedError,
    echo,
    estimate_tokens,
    fail_first,
)
from niceeval.testing._scripted_model import InjectedFaultError, ScriptedModel
from niceeval.testing._server import LLMServer, serve

__all__ = [
    "Fault",
    "FaultRule",
    "InjectedFaultError",
    "LLMRequest",
    "LLMServer",
    "Message",
    "Reply",
    "ReplyLike",
    "Script",
    "ScriptExhaustedError",
    "ScriptedModel",
    "TokenUsage",
    "Tool",
    "ToolCall",
    "echo",
    "estimate_tokens",
    "fail_first",
    "serve",
]
