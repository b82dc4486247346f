"""`codex_agent`: OpenAI's Codex (`codex exec --json`) as the agent under test, in the eval's sandbox.

Its stream: `thread.started` (the session id), `turn.started`, `item.started` / `item.completed` for each item
(`command_execution`, `file_change`, `mcp_tool_call`, `web_search`, `agent_message`, `reasoning`, `error`),
and `turn.completed` with the turn's usage (or `turn.failed`). Codex runs its commands itself; niceeval's
sandbox isolates it (`--sandbox danger-full-access` turns Codex's own sandbox off).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from niceeval._core.errors import UsageError
from niceeval._core.events import ActionCalledEvent, ErrorEvent, EventLog, SubagentCalledEvent
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
from niceeval.agents._kit import priced_model, usage_event

CODEX = CLI(title="Codex", command="codex", package="@openai/codex", version="0.169.0")
_TOOL_ITEMS = {"command_execution", "file_change", "mcp_tool_call", "web_search"}


class CodexAgent(CodingAgentBase):
    """Codex run headless (`codex exec --json`) once per message; `resume` continues the session."""

    cli = CODEX

    def prepare_home(self, home: Path) -> None:
        self.install_guidance(home / ".codex", "AGENTS.md")
        (home / ".codex" / "config.toml").write_text(self._config(), encoding="utf-8")

    def _config(self) -> str:
        lines = [
            'model_provider = "niceeval"',
            # No usage analytics from eval runs (as DISABLE_TELEMETRY for Claude Code); in a sandbox without
            # network Codex would also wait seconds at exit trying to send them.
            "[analytics]",
            "enabled = false",
            "[model_providers.niceeval]",
            'name = "niceeval"',
            f"base_url = {_toml(self._base_url())}",
            'env_key = "OPENAI_API_KEY"',
            'wire_api = "responses"',
        ]
        for name, server in self.options.mcp_servers.items():
            lines.append(f"[mcp_servers.{_toml(name)}]")
            lines += [f"{key} = {_toml(value)}" for key, value in server.items()]
        return "\n".join(lines) + "\n"

    def _base_url(self) -> str:
        return self.options.base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"

    def invocation(self, message: str, state: SessionState) -> Invocation:
        options = self.options
        binary = self.cli.find(options.executable)
        argv = [str(binary), "exec", "--json", "--skip-git-repo-check", "--sandbox", "danger-full-access"]
        if options.model:
            argv += ["--model", options.model]
        argv += list(options.extra_args)
        if state.cli_session:
            argv += ["resume", state.cli_session]
        argv += ["--", message]
        env = {
            "HOME": str(state.home),
            "CODEX_HOME": str(state.home / ".codex"),
            "OPENAI_API_KEY": options.api_key or os.environ.get("OPENAI_API_KEY") or "",
        }
        return Invocation(
            argv=tuple(argv),
            launch=self.launch_options(state.home, env, binary, endpoint_of(self._base_url())),
            timeout=options.timeout,
            max_turns=options.max_turns,
        )

    def translator(self, log: EventLog, state: SessionState) -> CodexStream:
        return CodexStream(log, self.options.model or "")


def codex_agent(options: CodingAgentOptions | None = None, **fields: Any) -> CodexAgent:
    """Codex as the agent under test: each message runs `codex exec --json` headless in the eval's sandbox.

    Give the setup as an options object, or as its fields: `codex_agent(model="gpt-5-codex")`. The eval needs
    a fixture (`@define_eval(fixture=...)`). Install the CLI with `npm install -g @openai/codex@0.169.0` (the
    version niceeval is tested with). `max_turns` counts Codex's tool calls (commands, file changes, MCP and
    web calls); `allowed_tools` does not apply (Codex has no such list).

    Args:
        options: A `CodingAgentOptions`.
        **fields: `CodingAgentOptions` fields, instead of (or overriding those of) `options`.
    """
    merged = merged_options(options, fields)
    if merged.allowed_tools is not None:
        raise UsageError(
            "codex_agent: allowed_tools is Claude Code's --allowedTools; Codex has no such list. Limit what it "
            "can do with the sandbox (sandbox='bwrap') or with its configuration (extra_args=['-c', ...])."
        )
    return CodexAgent(merged)


class CodexStream:
    """Codex's JSON lines as niceeval events."""

    def __init__(self, log: EventLog, model: str) -> None:
        self.outcome = TurnOutcome()
        self._log = log
        self._model = model
        self._started: dict[str, float] = {}
        self._texts: list[str] = []

    def line(self, data: dict[str, Any]) -> None:
        kind = data.get("type")
        raw_item = data.get("item")
        item: dict[str, Any] = raw_item if isinstance(raw_item, dict) else {}
        if kind == "thread.started" and isinstance(data.get("thread_id"), str):
            self.outcome.session_id = data["thread_id"]
        elif kind == "item.started":
            self._started[str(item.get("id"))] = time.monotonic()
        elif kind == "item.completed":
            self._completed(item)
        elif kind == "turn.completed":
            self.outcome.done = True
            usage = data.get("usage") or {}
            self._log.emit(
                usage_event(
                    priced_model(self._model, "openai") if self._model else "",
                    prompt_tokens=int(usage.get("input_tokens") or 0),
                    output_tokens=int(usage.get("output_tokens") or 0),
                    cached_tokens=int(usage.get("cached_input_tokens") or 0),
                )
            )
        elif kind in ("turn.failed", "error"):
            raw_error = data.get("error")
            error: dict[str, Any] = raw_error if isinstance(raw_error, dict) else data
            self.outcome.failed = True
            self.outcome.done = kind == "turn.failed"
            self._log.emit(ErrorEvent(message=str(error.get("message") or kind), error_type=f"codex {kind}"))

    def finish(self, error: str | None) -> None:
        self.outcome.text = self._texts[-1] if self._texts else ""

    def _completed(self, item: dict[str, Any]) -> None:
        kind = str(item.get("type") or "")
        item_id = str(item.get("id") or "")
        started = self._started.pop(item_id, None)
        duration = None if started is None else round(time.monotonic() - started, 3)
        if kind == "agent_message":
            self._texts.append(str(item.get("text") or ""))
        elif kind == "error":
            self._log.emit(ErrorEvent(message=str(item.get("message") or ""), error_type="codex"))
        elif kind == "collab_tool_call":
            failed = item.get("status") == "failed"
            self._log.emit(
                SubagentCalledEvent(
                    name=str(item.get("tool") or "subagent"),
                    status="failed" if failed else "success",
                    input=item.get("prompt"),
                    output=item.get("agents_states"),
                )
            )
        elif kind in _TOOL_ITEMS:
            self.outcome.turns += 1
            self._log.emit(_action(item_id, kind, item, duration))


def _action(item_id: str, kind: str, item: dict[str, Any], duration: float | None) -> ActionCalledEvent:
    failed = item.get("status") in ("failed", "declined")
    if kind == "command_execution":
        exit_code = item.get("exit_code")
        failed = failed or (isinstance(exit_code, int) and exit_code != 0)
        return ActionCalledEvent(
            id=item_id,
            name="exec_command",
            kind="shell",
            input={"command": item.get("command")},
            status="failed" if failed else "success",
            output=str(item.get("aggregated_output") or ""),
            error=(f"exited with status {exit_code}" if isinstance(exit_code, int) else "failed") if failed else None,
            exit_code=exit_code if isinstance(exit_code, int) else None,
            duration=duration,
        )
    name: str
    arguments: Any
    output: Any = None
    if kind == "file_change":
        name, arguments = "apply_patch", {"changes": item.get("changes")}
    elif kind == "mcp_tool_call":
        name = f"{item.get('server')}/{item.get('tool')}"
        arguments, output = item.get("arguments"), item.get("result")
    else:
        name, arguments = "web_search", {"query": item.get("query")}
    error = item.get("error")
    return ActionCalledEvent(
        id=item_id,
        name=name,
        input=arguments,
        status="failed" if failed or error else "success",
        output=output,
        error=str(error.get("message") if isinstance(error, dict) else error) if error else None,
        duration=duration,
    )


def _toml(value: object) -> str:
    """A TOML value for a string, number, list or table of them (JSON's string escapes are TOML's)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return json.dumps(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{json.dumps(str(k))} = {_toml(v)}" for k, v in value.items()) + " }"
    raise UsageError(f"codex_agent: cannot write {value!r} into Codex's config.toml (use strings, lists, tables).")
