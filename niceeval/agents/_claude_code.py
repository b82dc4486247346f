"""`claude_code_agent`: Claude Code (`claude -p`, stream-json) as the agent under test, in the eval's sandbox.

Its stream: `system/init` (session id, tools), `assistant` lines whose content holds `text` and `tool_use`
blocks, `user` lines with the `tool_result` blocks that answer them, and a final `result` (the reply, whether
it failed, usage and cost). Every line carries a timestamp, which times each tool call.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from niceeval._core.events import ActionCalledEvent, ErrorEvent, EventLog, SubagentCalledEvent, UsageEvent
from niceeval.agents._coding import (
    CLI,
    CodingAgentBase,
    CodingAgentOptions,
    Invocation,
    SessionState,
    TurnOutcome,
    endpoint_of,
    merged_options,
)
from niceeval.agents._kit import priced_model

CLAUDE_CODE = CLI(title="Claude Code", command="claude", package="@anthropic-ai/claude-code", version="2.1.330")
DEFAULT_ALLOWED_TOOLS = (
    "Bash",
    "Edit",
    "MultiEdit",
    "Write",
    "Read",
    "Glob",
    "Grep",
    "LS",
    "TodoWrite",
    "Skill",
    "Task",
)
"""Tools a headless Claude Code may use without asking, when `allowed_tools` is not given."""
_SUBAGENT_TOOLS = ("Task", "Agent")
_QUIET = {
    "DISABLE_TELEMETRY": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
}


class ClaudeCodeAgent(CodingAgentBase):
    """Claude Code run headless (`claude -p ... --output-format stream-json`) once per message."""

    cli = CLAUDE_CODE

    def prepare_home(self, home: Path) -> None:
        self.install_guidance(home / ".claude", "CLAUDE.md")
        if self.options.mcp_servers:
            servers = {name: dict(server) for name, server in self.options.mcp_servers.items()}
            (home / "mcp.json").write_text(json.dumps({"mcpServers": servers}, indent=2), encoding="utf-8")

    def invocation(self, message: str, state: SessionState) -> Invocation:
        options = self.options
        binary = self.cli.find(options.executable)
        base_url = options.base_url or os.environ.get("ANTHROPIC_BASE_URL") or "https://api.anthropic.com"
        api_key = options.api_key or os.environ.get("ANTHROPIC_API_KEY") or ""
        argv = [str(binary), "-p", message, "--output-format", "stream-json", "--verbose"]
        argv += ["--allowedTools", ",".join(options.allowed_tools or DEFAULT_ALLOWED_TOOLS)]
        if options.model:
            argv += ["--model", options.model]
        if options.max_turns is not None:
            argv += ["--max-turns", str(options.max_turns)]
        if options.mcp_servers:
            argv += ["--mcp-config", str(state.home / "mcp.json"), "--strict-mcp-config"]
        if state.cli_session:
            argv += ["--resume", state.cli_session]
        argv += list(options.extra_args)
        env = {"HOME": str(state.home), "ANTHROPIC_BASE_URL": base_url, **_QUIET}
        if api_key:  # an empty key reads as "not logged in"; without one the CLI uses its own login, if any
            env["ANTHROPIC_API_KEY"] = api_key
        return Invocation(
            argv=tuple(argv),
            launch=self.launch_options(state.home, env, binary, endpoint_of(base_url)),
            timeout=options.timeout,
            max_turns=options.max_turns,
        )

    def translator(self, log: EventLog, state: SessionState) -> ClaudeCodeStream:
        return ClaudeCodeStream(log, state)


def claude_code_agent(options: CodingAgentOptions | None = None, **fields: Any) -> ClaudeCodeAgent:
    """Claude Code as the agent under test: each message runs `claude -p` headless in the eval's sandbox.

    Give the setup as an options object, or as its fields: `claude_code_agent(model="claude-sonnet-4-5")`.
    The eval needs a fixture (`@define_eval(fixture=...)`): the CLI works in its workspace. Install the CLI
    with `npm install -g @anthropic-ai/claude-code@2.1.330` (the version niceeval is tested with).

    Args:
        options: A `CodingAgentOptions` (model, instructions, skills, MCP servers, allowed tools, turn limit,
            timeout, endpoint, executable).
        **fields: `CodingAgentOptions` fields, instead of (or overriding those of) `options`.
    """
    return ClaudeCodeAgent(merged_options(options, fields))


@dataclass(slots=True)
class _Call:
    name: str
    input: Any
    at: datetime | None
    seen: float = field(default_factory=time.monotonic)


class ClaudeCodeStream:
    """Claude Code's stream-json lines as niceeval events."""

    def __init__(self, log: EventLog, state: SessionState) -> None:
        self.outcome = TurnOutcome()
        self._log = log
        self._state = state
        self._calls: dict[str, _Call] = {}
        self._messages: dict[str, tuple[str, dict[str, Any]]] = {}
        self._texts: list[str] = []
        self._ended = False

    def line(self, data: dict[str, Any]) -> None:
        kind = data.get("type")
        if isinstance(data.get("session_id"), str):
            self.outcome.session_id = data["session_id"]
        if kind == "assistant":
            self._assistant(data)
        elif kind == "user":
            self._user(data)
        elif kind == "result":
            self._result(data)

    def finish(self, error: str | None) -> None:
        for call_id in list(self._calls):
            self._ended_call(call_id, error or "the agent ended before the tool returned", failed=True, at=None)
        if not self._ended:  # no `result` line: count what the messages reported
            for model, usage in self._messages.values():
                self._log.emit(_usage(model, usage, cost=None))
            self.outcome.text = self.outcome.text or "\n".join(self._texts)

    def _assistant(self, data: dict[str, Any]) -> None:
        message = data.get("message") or {}
        main = data.get("parent_tool_use_id") is None
        message_id = str(message.get("id") or "")
        if main and message_id and message_id not in self._messages:
            self.outcome.turns += 1
        if message_id and isinstance(message.get("usage"), dict):
            self._messages[message_id] = (str(message.get("model") or ""), message["usage"])
        for block in message.get("content") or []:
            if block.get("type") == "text" and main:
                self._texts.append(str(block.get("text") or ""))
            elif block.get("type") == "tool_use":
                self._calls[str(block.get("id"))] = _Call(
                    name=str(block.get("name") or ""), input=block.get("input"), at=_timestamp(data)
                )

    def _user(self, data: dict[str, Any]) -> None:
        content = (data.get("message") or {}).get("content")
        if not isinstance(content, list):
            return
        for block in content:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                output = _text(block.get("content"))
                self._ended_call(
                    str(block.get("tool_use_id")), output, failed=bool(block.get("is_error")), at=_timestamp(data)
                )

    def _ended_call(self, call_id: str, output: str, *, failed: bool, at: datetime | None) -> None:
        call = self._calls.pop(call_id, None)
        if call is None:
            return
        status: Literal["success", "failed"] = "failed" if failed else "success"
        if call.name in _SUBAGENT_TOOLS:
            name = (
                str((call.input or {}).get("subagent_type") or call.name) if isinstance(call.input, dict) else call.name
            )
            self._log.emit(SubagentCalledEvent(name=name, status=status, input=call.input, output=output))
            return
        duration = (at - call.at).total_seconds() if at and call.at else time.monotonic() - call.seen
        self._log.emit(
            ActionCalledEvent(
                id=call_id,
                name=call.name,
                kind="shell" if call.name == "Bash" else "skill" if call.name == "Skill" else "tool",
                input=call.input,
                status=status,
                output=output,
                error=output if failed else None,
                exit_code=_exit_code(call.name, output, failed),
                duration=round(max(0.0, duration), 3),
            )
        )

    def _result(self, data: dict[str, Any]) -> None:
        self._ended = self.outcome.done = True
        self.outcome.text = str(data.get("result") or "\n".join(self._texts))
        if data.get("is_error") or data.get("subtype") != "success":
            self.outcome.failed = True
            errors = data.get("errors") or [data.get("result") or data.get("subtype")]
            message = f"Claude Code ended with {data.get('subtype')}: " + "; ".join(str(e) for e in errors)
            self._log.emit(ErrorEvent(message=message, error_type=str(data.get("subtype") or "error")))
        for usage in self._usage_since_last(data).values():
            self._log.emit(usage)

    def _usage_since_last(self, data: dict[str, Any]) -> dict[str, UsageEvent]:
        """This run's spend per model: `modelUsage` is the session's running total, so subtract the last one."""
        totals = data.get("modelUsage")
        if not isinstance(totals, dict) or not totals:
            usage = data.get("usage") or {}
            model = next((m for m, _ in self._messages.values() if m), "")
            return {model: _usage(model, usage, cost=_number(data.get("total_cost_usd")))}
        events = {}
        for model, now in totals.items():
            before = self._state.model_totals.get(model, {})
            delta = {key: _number(now.get(key)) - _number(before.get(key)) for key in _TOTAL_KEYS}
            self._state.model_totals[model] = {key: _number(now.get(key)) for key in _TOTAL_KEYS}
            events[model] = UsageEvent(
                model=priced_model(model, "anthropic"),
                input_tokens=int(delta["inputTokens"] + delta["cacheCreationInputTokens"]),
                output_tokens=int(delta["outputTokens"]),
                cache_read_tokens=int(delta["cacheReadInputTokens"]),
                cost=round(delta["costUSD"], 10),
            )
        return events


_TOTAL_KEYS = ("inputTokens", "outputTokens", "cacheReadInputTokens", "cacheCreationInputTokens", "costUSD")


def _usage(model: str, usage: dict[str, Any], *, cost: float | None) -> UsageEvent:
    return UsageEvent(
        model=priced_model(model, "anthropic") if model else "",
        input_tokens=int(_number(usage.get("input_tokens")) + _number(usage.get("cache_creation_input_tokens"))),
        output_tokens=int(_number(usage.get("output_tokens"))),
        cache_read_tokens=int(_number(usage.get("cache_read_input_tokens"))),
        cost=cost,
    )


def _number(value: object) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return "" if content is None else json.dumps(content)


def _timestamp(data: dict[str, Any]) -> datetime | None:
    raw = data.get("timestamp")
    if not isinstance(raw, str):
        return None
    try:
        return datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        return None


def _exit_code(name: str, output: str, failed: bool) -> int | None:
    """A Bash call's exit status: Claude Code reports a failing one as `Exit code N` first thing."""
    if name != "Bash":
        return None
    if not failed:
        return 0
    head = output.strip().split("\n", 1)[0]
    if head.startswith("Exit code "):
        rest = head.removeprefix("Exit code ").strip()
        return int(rest) if rest.lstrip("-").isdigit() else None
    return None
