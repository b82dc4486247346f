"""The coding CLIs' JSON lines as events, line by line (no CLI needed): what each kind of line becomes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from niceeval._core.errors import UsageError
from niceeval._core.events import ActionCalledEvent, ErrorEvent, EventLog, SubagentCalledEvent, UsageEvent
from niceeval.agents import CodingAgentOptions, codex_agent
from niceeval.agents._claude_code import ClaudeCodeStream
from niceeval.agents._codex import CodexStream
from niceeval.agents._coding import SessionState


def claude_lines(log: EventLog, state: SessionState, lines: list[dict[str, Any]]) -> ClaudeCodeStream:
    stream = ClaudeCodeStream(log, state)
    for line in lines:
        stream.line(line)
    stream.finish(None)
    return stream


def tool_use(call_id: str, name: str, arguments: dict[str, Any], at: str, parent: str | None = None) -> dict[str, Any]:
    content = [{"type": "tool_use", "id": call_id, "name": name, "input": arguments}]
    message = {"id": f"msg_{call_id}", "model": "claude-sonnet-4-5", "content": content, "usage": {}}
    return {"type": "assistant", "message": message, "parent_tool_use_id": parent, "timestamp": at}


def tool_result(call_id: str, output: str, at: str, *, error: bool = False) -> dict[str, Any]:
    block = {"type": "tool_result", "tool_use_id": call_id, "content": output, "is_error": error}
    return {"type": "user", "message": {"content": [block]}, "timestamp": at}


def result(cost: float, tokens: int, **extra: Any) -> dict[str, Any]:
    usage = {"inputTokens": tokens, "outputTokens": 10, "cacheReadInputTokens": 5, "cacheCreationInputTokens": 0}
    return {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "result": "Done.",
        "session_id": "s-1",
        "modelUsage": {"claude-sonnet-4-5": {**usage, "costUSD": cost}},
        **extra,
    }


def test_claude_code_tool_calls_are_timed_by_their_lines_and_subagents_are_apart(tmp_path: Path) -> None:
    log = EventLog()
    stream = claude_lines(
        log,
        SessionState(home=tmp_path),
        [
            tool_use("t1", "Task", {"subagent_type": "Explore", "prompt": "look"}, "2026-01-01T00:00:00.000Z"),
            tool_use("t2", "Grep", {"pattern": "x"}, "2026-01-01T00:00:01.000Z", parent="t1"),
            tool_result("t2", "a.py:1:x", "2026-01-01T00:00:01.250Z"),
            tool_result("t1", "found it", "2026-01-01T00:00:03.000Z"),
            tool_use("t3", "Bash", {"command": "false"}, "2026-01-01T00:00:04.000Z"),
            tool_result("t3", "Exit code 1\n", "2026-01-01T00:00:04.500Z", error=True),
            result(0.5, 100),
        ],
    )
    grep, bash = [e for e in log.events if isinstance(e, ActionCalledEvent)]
    (explore,) = [e for e in log.events if isinstance(e, SubagentCalledEvent)]
    assert (grep.name, grep.duration, grep.output, grep.status) == ("Grep", 0.25, "a.py:1:x", "success")
    assert (bash.kind, bash.status, bash.exit_code, bash.duration) == ("shell", "failed", 1, 0.5)
    assert (explore.name, explore.output, explore.input["prompt"]) == ("Explore", "found it", "look")
    assert (stream.outcome.text, stream.outcome.session_id, stream.outcome.turns) == ("Done.", "s-1", 2)


def test_claude_code_usage_is_each_messages_share_of_the_sessions_totals(tmp_path: Path) -> None:
    state = SessionState(home=tmp_path)
    first, second = EventLog(), EventLog()
    claude_lines(first, state, [result(0.25, 100)])
    claude_lines(second, state, [result(0.75, 250)])  # the CLI reports running totals
    (one,), (two,) = ([e for e in log.events if isinstance(e, UsageEvent)] for log in (first, second))
    assert (one.model, one.input_tokens, one.cache_read_tokens, one.cost) == (
        "anthropic/claude-sonnet-4-5",
        100,
        5,
        0.25,
    )
    assert (two.input_tokens, two.output_tokens, two.cache_read_tokens, two.cost) == (150, 0, 0, 0.5)


def test_a_claude_code_error_result_fails_the_turn_with_its_reason(tmp_path: Path) -> None:
    log = EventLog()
    stream = claude_lines(
        log,
        SessionState(home=tmp_path),
        [result(0.1, 10, subtype="error_max_turns", is_error=True, errors=["Reached maximum number of turns (2)"])],
    )
    (error,) = [e for e in log.events if isinstance(e, ErrorEvent)]
    assert stream.outcome.failed and error.error_type == "error_max_turns"
    assert "Reached maximum number of turns (2)" in error.message


def test_a_claude_code_call_cut_off_by_the_end_is_a_failed_action(tmp_path: Path) -> None:
    log = EventLog()
    stream = ClaudeCodeStream(log, SessionState(home=tmp_path))
    stream.line(tool_use("t1", "Bash", {"command": "sleep 100"}, "2026-01-01T00:00:00.000Z"))
    stream.finish("timed out after 5 s")
    (cut,) = [e for e in log.events if isinstance(e, ActionCalledEvent)]
    assert (cut.status, cut.error) == ("failed", "timed out after 5 s")


def codex_lines(lines: list[dict[str, Any]]) -> tuple[EventLog, CodexStream]:
    log = EventLog()
    stream = CodexStream(log, "gpt-5")
    for line in lines:
        stream.line(line)
    stream.finish(None)
    return log, stream


def test_codex_items_become_actions_subagents_errors_and_usage() -> None:
    change = {"id": "i2", "type": "file_change", "changes": [{"path": "a.py", "kind": "update"}], "status": "completed"}
    mcp = {"id": "i3", "type": "mcp_tool_call", "server": "docs", "tool": "search", "arguments": {"q": "x"},
           "result": {"content": []}, "error": {"message": "server gone"}, "status": "failed"}  # fmt: skip
    collab = {"id": "i4", "type": "collab_tool_call", "tool": "spawn_agent", "prompt": "help", "status": "completed"}
    log, stream = codex_lines(
        [
            {"type": "thread.started", "thread_id": "th-1"},
            {"type": "item.completed", "item": {"id": "i0", "type": "error", "message": "metadata not found"}},
            {"type": "item.started", "item": {"id": "i1", "type": "command_execution", "command": "ls"}},
            {
                "type": "item.completed",
                "item": {
                    "id": "i1",
                    "type": "command_execution",
                    "command": "ls",
                    "aggregated_output": "nope\n",
                    "exit_code": 2,
                    "status": "failed",
                },
            },
            {"type": "item.completed", "item": change},
            {"type": "item.completed", "item": mcp},
            {"type": "item.completed", "item": collab},
            {"type": "item.completed", "item": {"id": "i5", "type": "agent_message", "text": "All done."}},
            {
                "type": "turn.completed",
                "usage": {"input_tokens": 1000, "cached_input_tokens": 400, "output_tokens": 20},
            },
        ]  # fmt: skip
    )
    command, patch, tool = [e for e in log.events if isinstance(e, ActionCalledEvent)]
    assert (command.name, command.kind, command.exit_code, command.status) == ("exec_command", "shell", 2, "failed")
    assert command.error == "exited with status 2" and command.duration is not None
    assert (patch.name, patch.status, patch.input) == ("apply_patch", "success", {"changes": change["changes"]})
    assert (tool.name, tool.status, tool.error) == ("docs/search", "failed", "server gone")
    (subagent,) = [e for e in log.events if isinstance(e, SubagentCalledEvent)]
    assert (subagent.name, subagent.input) == ("spawn_agent", "help")
    (warning,) = [e for e in log.events if isinstance(e, ErrorEvent)]
    assert warning.message == "metadata not found" and not stream.outcome.failed
    (usage,) = [e for e in log.events if isinstance(e, UsageEvent)]
    assert (usage.model, usage.input_tokens, usage.cache_read_tokens, usage.output_tokens) == (
        "openai/gpt-5",
        600,
        400,
        20,
    )
    assert (stream.outcome.text, stream.outcome.session_id, stream.outcome.turns) == ("All done.", "th-1", 3)
    assert stream.outcome.done


def test_a_failed_codex_turn_fails_with_its_message() -> None:
    log, stream = codex_lines([{"type": "turn.failed", "error": {"message": "stream disconnected"}}])
    (error,) = [e for e in log.events if isinstance(e, ErrorEvent)]
    assert stream.outcome.failed and error.message == "stream disconnected"


def test_coding_agent_options_are_checked_when_built(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="max_turns"):
        CodingAgentOptions(max_turns=0)
    with pytest.raises(UsageError, match="not a folder of skills"):
        CodingAgentOptions(skills=tmp_path / "missing")
    with pytest.raises(UsageError, match="needs a 'command'"):
        CodingAgentOptions(mcp_servers={"docs": {"args": []}})
    with pytest.raises(UsageError, match="fields are those of CodingAgentOptions"):
        codex_agent(modle="gpt-5")
    with pytest.raises(UsageError, match="Codex has no such list"):
        codex_agent(allowed_tools=["Bash"])


def test_codex_gets_its_provider_and_mcp_servers_in_its_own_config_format(tmp_path: Path) -> None:
    agent = codex_agent(
        base_url="http://127.0.0.1:9/v1",
        instructions="Be brief.",
        mcp_servers={"docs": {"command": "docs-mcp", "args": ["--port", "0"], "env": {"TOKEN": 'a"b'}}},
    )
    agent.prepare_home(tmp_path)
    config = (tmp_path / ".codex" / "config.toml").read_text()
    import tomllib

    parsed = tomllib.loads(config)
    assert parsed["model_providers"]["niceeval"]["base_url"] == "http://127.0.0.1:9/v1"
    assert parsed["mcp_servers"]["docs"] == {"command": "docs-mcp", "args": ["--port", "0"], "env": {"TOKEN": 'a"b'}}
    assert (tmp_path / ".codex" / "AGENTS.md").read_text() == "Be brief."
