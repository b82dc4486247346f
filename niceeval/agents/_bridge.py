"""`bridge_agent`: any agent that calls an OpenAI-compatible API, recorded by routing its calls through niceeval.

The agent is your own code: a function `(message, session)` that runs whatever agent you have (a hand-written loop,
a framework, a subprocess) and hands its OpenAI client `session.base_url` and `session.api_key`. Each session gets
its own URL on a local server (the bridge, one per suite) that forwards every request to the real upstream and
relays the answer unchanged, recording on the way one `usage` event per model call and one `action.called` event
per tool call (the model's request paired by call id with the result the agent sends back). Like Inspect's
`agent_bridge()`, without mapping any framework's objects.
"""

from __future__ import annotations

import inspect
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, overload

from anyio.lowlevel import cancel_shielded_checkpoint

from niceeval._core.errors import UsageError
from niceeval._core.events import ActionCalledEvent, EventLog, MessageEvent
from niceeval._core.threads import load_off_loop
from niceeval._core.values import head
from niceeval.agents._bridge_wire import PLACEHOLDER_KEY, Answer, RequestedCall, ToolResult
from niceeval.agents._function import AgentFunction, FunctionSession
from niceeval.agents._kit import Histories, parse_arguments, priced_model, usage_event
from niceeval.providers import release, shared_resource

if TYPE_CHECKING:
    from niceeval.agents._bridge_server import Bridge, Route, Upstream

DEFAULT_UPSTREAM = "https://api.openai.com/v1"
MAX_RECORDED_CHARS = 32_000
"""A tool call's input or output longer than this is recorded cut, with a note saying how long it was."""


@dataclass(frozen=True, kw_only=True, slots=True)
class BridgeOptions:
    """Where the bridge sends an agent's model calls.

    Args:
        upstream: The OpenAI-compatible base URL (ending in `/v1`); `OPENAI_BASE_URL` when the session opens,
            else `https://api.openai.com/v1`.
        api_key: Sent upstream in place of whatever the agent sends. Without it the agent's own
            `Authorization` header is forwarded, and the session's placeholder key (or none) becomes
            `OPENAI_API_KEY`.
        timeout: Seconds the bridge waits for the upstream (the agent's client has its own timeout too).
    """

    upstream: str | None = None
    api_key: str | None = None
    timeout: float = 600.0

    def __post_init__(self) -> None:
        if self.upstream is not None:
            _check_url(self.upstream, "upstream=")
        if not self.timeout > 0:
            raise UsageError(f"bridge_agent: timeout= is seconds, more than 0; got {self.timeout!r}.")


@overload
def bridge_agent(
    fn: AgentFunction, /, *, upstream: str | None = None, api_key: str | None = None, timeout: float = 600.0
) -> BridgeAgent: ...


@overload
def bridge_agent(
    *, upstream: str | None = None, api_key: str | None = None, timeout: float = 600.0
) -> Callable[[AgentFunction], BridgeAgent]: ...


def bridge_agent(
    fn: AgentFunction | None = None,
    /,
    *,
    upstream: str | None = None,
    api_key: str | None = None,
    timeout: float = 600.0,
) -> BridgeAgent | Callable[[AgentFunction], BridgeAgent]:
    """Any agent that calls an OpenAI-compatible API, its model calls routed through niceeval and recorded.

        @bridge_agent
        async def support(message: str, session: BridgeSession) -> str:
            client = AsyncOpenAI(base_url=session.base_url, api_key=session.api_key)
            return await my_agent(message, client)

    `fn(message, session)` (sync or async) runs the agent and returns its reply, like a function agent. The
    agent's OpenAI client (or framework, or subprocess: `session.env`) must use the session's URL; every call it
    makes there is forwarded upstream and answered unchanged, and recorded: a `usage` event per model call
    (`openai/<model>`, priced by `t.max_cost`), an `action.called` event per tool call.

    Args:
        fn: The agent function; also usable as `@bridge_agent` or `@bridge_agent(upstream=...)`.
        upstream: The OpenAI-compatible base URL to forward to; `OPENAI_BASE_URL`, else OpenAI's.
        api_key: The upstream's key, sent in place of the agent's; else the agent's own `Authorization` is
            forwarded, and the session's placeholder key is replaced by `OPENAI_API_KEY`.
        timeout: Seconds the bridge waits for the upstream.

    Raises:
        UsageError: `fn` does not take `(message, session)`, or an option is invalid.
    """
    options = BridgeOptions(upstream=upstream, api_key=api_key, timeout=timeout)
    if fn is None:
        return lambda function: BridgeAgent(function, options)
    return BridgeAgent(fn, options)


class BridgeAgent:
    """Opens bridged sessions on an agent function; conversations are kept per session id (`t.revive()`)."""

    def __init__(self, fn: AgentFunction, options: BridgeOptions) -> None:
        if not callable(fn):
            raise UsageError(f"bridge_agent needs a function, got {type(fn).__name__}.")
        if not _takes_two(fn):
            name = getattr(fn, "__name__", "fn")
            raise UsageError(
                f"bridge_agent: {name} must take (message, session): the session's base_url is where its OpenAI "
                f"client sends requests, e.g. `def {name}(message, session): ...`."
            )
        self.fn = fn
        self.options = options
        self._histories: Histories[list[MessageEvent]] = Histories()

    async def open(self, session_id: str, log: EventLog) -> BridgeSession:
        """Start (or continue) the conversation `session_id` on a fresh URL of the suite's bridge."""
        await load_off_loop("niceeval.agents._bridge_server")  # the server (uvicorn, httpx) loads on first use
        from niceeval.agents._bridge_server import Bridge

        history = self._histories.get(session_id) or []
        self._histories.put(session_id, history)
        bridge = shared_resource("niceeval-bridge", Bridge)
        recording = Recording(log)
        try:
            route = bridge.open_route(self._upstream(), recording)
        except BaseException:
            await release(bridge)
            raise
        return BridgeSession(self.fn, session_id, log, history, _Connection(bridge, route, recording))

    def _upstream(self) -> Upstream:
        from niceeval.agents._bridge_server import Upstream

        url = self.options.upstream or os.environ.get("OPENAI_BASE_URL") or DEFAULT_UPSTREAM
        _check_url(url, "OPENAI_BASE_URL")
        return Upstream(
            url=url,
            api_key=self.options.api_key,
            default_key=os.environ.get("OPENAI_API_KEY") or None,
            timeout=self.options.timeout,
        )


@dataclass(frozen=True, slots=True)
class _Connection:
    bridge: Bridge
    route: Route
    recording: Recording


class BridgeSession(FunctionSession):
    """A conversation whose model calls go through the bridge: give the agent `base_url` and `api_key` (or `env`).

    The helpers of function sessions (`tool`, `call_tool`, `usage`, `subagent`, `request_input`, `history`,
    `workspace`) work here too, for what the bridge cannot see.
    """

    def __init__(
        self, fn: AgentFunction, session_id: str, log: EventLog, history: list[MessageEvent], connection: _Connection
    ) -> None:
        super().__init__(fn, session_id, log, history)
        self._takes_session = True
        self._connection: _Connection | None = connection
        self.base_url = connection.bridge.base_url(connection.route)
        """This session's OpenAI base URL on the bridge, `http://127.0.0.1:PORT/s/<token>/v1` (404 once closed)."""

    @property
    def api_key(self) -> str:
        """A placeholder key for the agent's client: the bridge sends the real one upstream (`api_key=`, else
        `OPENAI_API_KEY`)."""
        return PLACEHOLDER_KEY

    @property
    def env(self) -> dict[str, str]:
        """`OPENAI_BASE_URL` and `OPENAI_API_KEY` for an agent run as a subprocess:
        `subprocess.run(cmd, env={**os.environ, **session.env})`."""
        return {"OPENAI_BASE_URL": self.base_url, "OPENAI_API_KEY": self.api_key}

    async def _answer(self, message: str) -> Any:
        try:
            return await super()._answer(message)
        finally:
            await self._turn_ended()

    async def _turn_ended(self) -> None:
        # The bridge hands what it saw to this loop before the agent gets the end of each answer; an agent that
        # blocked the loop (a sync client in `async def`) returns before the loop ran those hand-overs: run them.
        await cancel_shielded_checkpoint()
        if self._connection is not None:
            self._connection.recording.turn_ended()

    async def close(self) -> None:
        """Close the session's URL (requests still in flight end) and give the bridge back."""
        await self._turn_ended()
        connection, self._connection = self._connection, None
        if connection is not None:
            connection.bridge.close_route(connection.route)
            await release(connection.bridge)


class Recording:
    """What the bridge saw of one session, as events; runs on the session's event loop.

    A tool call is recorded when its result goes back to the model (paired by call id), or when the turn ends
    without one (no output then). Results for calls the bridge never saw requested (history the agent replays
    each time) are ignored, so each call is recorded once.
    """

    def __init__(self, log: EventLog) -> None:
        self._log = log
        self._pending: dict[str, RequestedCall] = {}

    def requested(self, results: list[ToolResult]) -> None:
        """A request to the model went out with these tool results."""
        for result in results:
            call = self._pending.pop(result.call_id, None)
            if call is not None:
                self._log.emit(_action(call, result.output, answered=True))

    def answered(self, requested_model: str, answer: Answer) -> None:
        """The model answered: its usage, and the calls it asked for (recorded once their results come back)."""
        if answer.usage is not None:
            model = priced_model(_capped(requested_model or answer.model or "unknown"))
            usage = answer.usage
            self._log.emit(
                usage_event(
                    model,
                    prompt_tokens=usage.prompt_tokens,
                    output_tokens=usage.output_tokens,
                    cached_tokens=usage.cached_tokens,
                )
            )
        for call in answer.calls:
            self._pending.setdefault(call.id, call)

    def turn_ended(self) -> None:
        """Record the calls whose results never went back to the model."""
        for call in self._pending.values():
            self._log.emit(_action(call, None, answered=False))
        self._pending.clear()


def _action(call: RequestedCall, output: object, *, answered: bool) -> ActionCalledEvent:
    value, error = _recorded_output(output) if answered else (None, None)
    return ActionCalledEvent(
        id=_capped(call.id),
        name=_capped(call.name),
        input=_capped(call.arguments) if len(call.arguments) > MAX_RECORDED_CHARS else parse_arguments(call.arguments),
        status="failed" if error is not None else "success",
        output=value,
        error=error,
    )


def _recorded_output(output: object) -> tuple[object, str | None]:
    """The result as recorded (JSON text decoded), and the error when it is error-shaped (`{"error": ...}`)."""
    text = _as_text(output)
    if len(text) > MAX_RECORDED_CHARS:  # cut text is no longer JSON: kept as text
        return _capped(text), None
    value: object = text
    if text.lstrip().startswith(("{", "[")):
        try:
            value = json.loads(text)
        except (ValueError, RecursionError):
            value = text
    problem = value.get("error") if isinstance(value, dict) else None
    if problem in (None, False, "", [], {}):
        return value, None
    error = problem if isinstance(problem, str) else json.dumps(problem)
    return value, _capped(error)


def _as_text(output: object) -> str:
    """A tool result as text: content parts joined (other parts, images, as `[type]`)."""
    if output is None:
        return ""
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        return "".join(_part_text(part) for part in output)
    return json.dumps(output)


def _part_text(part: object) -> str:
    if isinstance(part, dict):
        if isinstance(part.get("text"), str):
            return str(part["text"])
        return f"[{part.get('type', 'part')}]"
    return part if isinstance(part, str) else ""


def _capped(text: str) -> str:
    if len(text) <= MAX_RECORDED_CHARS:
        return text
    note = f"[niceeval: truncated, kept {MAX_RECORDED_CHARS:,} of {len(text):,} characters]"
    return f"{head(text, MAX_RECORDED_CHARS)}\n{note}"


def _takes_two(fn: AgentFunction) -> bool:
    try:
        parameters = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):  # a builtin or C callable: nothing to check
        return True
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 2 or any(p.kind is p.VAR_POSITIONAL for p in parameters)


def _check_url(url: str, where: str) -> None:
    if not url.startswith(("http://", "https://")):
        raise UsageError(f"bridge_agent: {where} must be an http(s) URL ending in /v1, got {url!r}.")
