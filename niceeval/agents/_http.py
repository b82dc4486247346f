"""`http_agent`: the agent under test is your own service, reached with one JSON POST per message.

The wire format is documented in docs/agents.md; `HTTPAnswer` below is its answer half.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from niceeval._core.errors import NiceevalError, UsageError
from niceeval._core.events import Event, EventLog, MessageEvent, UsageEvent
from niceeval._core.threads import load_off_loop
from niceeval._core.values import head
from niceeval.agents._function import structure
from niceeval.agents._protocol import AgentReply
from niceeval.tracing._session import SessionTrace, TraceOptions, end_trace, session_trace, traced_turn

if TYPE_CHECKING:
    import httpx

_EVENT: TypeAdapter[Event] = TypeAdapter(Event)


class AgentError(NiceevalError):
    """The agent's service answered in a way niceeval cannot use (an error status, not JSON, a wrong shape)."""


class HTTPUsage(BaseModel):
    """Tokens spent by one model call the service made."""

    model_config = ConfigDict(extra="forbid")

    model: str
    """`provider/model`, e.g. `openai/gpt-5-mini`, so the run's cost can be priced."""
    input_tokens: int = Field(default=0, ge=0)
    """Input tokens not served from the provider's cache."""
    output_tokens: int = Field(default=0, ge=0)
    cache_read_tokens: int = Field(default=0, ge=0)
    cost: float | None = None
    """USD, when the service knows it; otherwise niceeval prices the tokens."""


class HTTPAnswer(BaseModel):
    """The JSON body the service answers with."""

    model_config = ConfigDict(extra="forbid")

    reply: str
    data: Any = None
    status: Literal["completed", "waiting", "failed"] = "completed"
    events: list[dict[str, Any]] = Field(default_factory=list)
    usage: list[HTTPUsage] = Field(default_factory=list)


class HTTPAgent:
    """Your service as the agent under test. Build it with `http_agent(url)`."""

    def __init__(
        self,
        url: str,
        *,
        headers: dict[str, str] | None = None,
        timeout: float = 60.0,
        max_sessions: int = 1024,
        traces: bool = False,
    ) -> None:
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise UsageError(f"http_agent needs an http:// or https:// URL, got {url!r}.")
        if timeout <= 0:
            raise UsageError(f"timeout must be a positive number of seconds, got {timeout!r}.")
        self.url = url
        self.headers = dict(headers or {})
        self.timeout = timeout
        self.traces = traces
        self._histories: OrderedDict[str, list[dict[str, Any]]] = OrderedDict()
        self._max_sessions = max_sessions

    async def open(self, session_id: str, log: EventLog) -> HTTPSession:
        """Open (or reopen) the conversation `session_id`; the history sent with each message carries over."""
        await load_off_loop("httpx")
        import httpx

        history = self._histories.pop(session_id, [])
        self._histories[session_id] = history
        while len(self._histories) > self._max_sessions:
            self._histories.popitem(last=False)
        client = httpx.AsyncClient(headers=self.headers, timeout=self.timeout)
        session = HTTPSession(self.url, session_id, log, history, client)
        session.trace = await session_trace(log, TraceOptions(events=False, listen=True)) if self.traces else None
        return session


class HTTPSession:
    """One conversation with the service."""

    def __init__(
        self, url: str, session_id: str, log: EventLog, history: list[dict[str, Any]], client: httpx.AsyncClient
    ) -> None:
        self.id = session_id
        self.log = log
        self.url = url
        self.history = history
        """The conversation so far, as sent in `history`: `{"role", "text", "data"}` dicts."""
        self._client = client
        self.trace: SessionTrace | None = None
        """The session's trace (`http_agent(traces=True)`): each request carries its turn's `traceparent`."""

    async def send(self, message: str, *, output: type[Any] | None = None) -> AgentReply:
        """POST the message and map the answer into the event stream.

        Raises:
            AgentError: The service could not be reached, answered a non-2xx status, or an unusable body;
                the message names the URL.
        """
        self.log.emit(MessageEvent(role="user", text=message))
        body = {
            "session_id": self.id,
            "message": message,
            "history": list(self.history),
            "output_schema": _schema_of(output),
        }
        async with traced_turn(self.trace):
            answer = await self._post(body)
        for index, raw in enumerate(answer.events):
            self.log.emit(self._event(raw, index))
        for usage in answer.usage:
            self.log.emit(UsageEvent(**usage.model_dump()))
        reply = structure(AgentReply(text=answer.reply, data=answer.data, status=answer.status), output, self.log)
        self.log.emit(MessageEvent(role="assistant", text=reply.text, data=reply.data))
        self.history.append({"role": "user", "text": message, "data": None})
        self.history.append({"role": "assistant", "text": reply.text, "data": answer.data})
        return reply

    async def close(self) -> None:
        """Close the HTTP client and the trace; the history stays with the agent for a revived session."""
        trace, self.trace = self.trace, None
        await end_trace(trace)
        await self._client.aclose()

    async def _post(self, body: dict[str, Any]) -> HTTPAnswer:
        import httpx

        try:
            traced = {"traceparent": self.trace.traceparent} if self.trace is not None else None
            response = await self._client.post(self.url, json=body, headers=traced)
        except httpx.TimeoutException as exc:
            raise AgentError(f"http agent {self.url}: no answer within {self._client.timeout.read}s") from exc
        except httpx.HTTPError as exc:
            raise AgentError(f"http agent {self.url}: could not reach the service: {exc!r}") from exc
        if not response.is_success:
            raise AgentError(f"http agent {self.url} answered HTTP {response.status_code}: {_excerpt(response.text)}")
        try:
            raw = response.json()
        except json.JSONDecodeError as exc:
            raise AgentError(
                f"http agent {self.url} answered with a body that is not JSON ({exc}): {_excerpt(response.text)}"
            ) from exc
        try:
            return HTTPAnswer.model_validate(raw)
        except ValidationError as exc:
            raise AgentError(f"http agent {self.url} answered with the wrong shape: {_problems(exc)}") from exc

    def _event(self, raw: dict[str, Any], index: int) -> Event:
        try:
            return _EVENT.validate_python({key: value for key, value in raw.items() if key != "seq"})
        except ValidationError as exc:
            raise AgentError(f"http agent {self.url}: events[{index}] is not a valid event: {_problems(exc)}") from exc


def http_agent(
    url: str, *, headers: dict[str, str] | None = None, timeout: float = 60.0, traces: bool = False
) -> HTTPAgent:
    """Your own service, reached over HTTP, as the agent under test.

    Each message is one `POST url` with `{"session_id", "message", "history", "output_schema"}`; the service
    answers `{"reply", "data", "status", "events", "usage"}`. See docs/agents.md for the exact format.

    Args:
        url: The endpoint to POST to.
        headers: Extra request headers, e.g. `{"Authorization": "Bearer ..."}`.
        timeout: Seconds to wait for each answer.
        traces: Send each request a W3C `traceparent` header and keep the spans the service exports under it
            to niceeval's OTLP receiver (`http://127.0.0.1:$NICEEVAL_OTLP_PORT/v1/traces`) for `t.span(...)` and
            the viewer; events still come from the answer, so nothing counts twice.

    Raises:
        UsageError: The URL is not http(s), or the timeout is not positive.
    """
    return HTTPAgent(url, headers=headers, timeout=timeout, traces=traces)


def _schema_of(output: type[Any] | None) -> dict[str, Any] | None:
    if output is None:
        return None
    try:
        return TypeAdapter(output).json_schema()
    except Exception as exc:
        raise UsageError(f"output={output!r} has no JSON schema to send to the service: {exc}") from exc


def _excerpt(text: str) -> str:
    return head(text, 300) + ("..." if len(text) > 300 else "")


def _problems(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(map(str, e['loc'])) or 'body'}: {e['msg']}" for e in exc.errors()[:5])
