"""The reply vocabulary: what a scripted model answers (text, tool calls, data, usage, latency, faults)."""

from __future__ import annotations

import json
from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

DEFAULT_RETRY_AFTER = 0.01
"""Seconds in the `Retry-After` of `Fault.rate_limit()`: short, so SDK retries in tests stay fast."""


class ToolCall(BaseModel):
    """A tool call the model makes (or made, when read back from a request).

    Attributes:
        name: The tool's name.
        arguments: The arguments, sent as a JSON object (OpenAI: a JSON string; Anthropic: `input`).
        id: The call id. Left `None` in a script, the server generates one (`call_0001`, `toolu_0001`).
    """

    model_config = ConfigDict(frozen=True)

    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    id: str | None = None


class TokenUsage(BaseModel):
    """Token counts reported for one reply.

    `input_tokens` counts the whole prompt, cached part included, as OpenAI's `prompt_tokens` does.
    Anthropic reports the cached part apart, so there `usage.input_tokens` is
    `input_tokens - cached_tokens` and `usage.cache_read_input_tokens` is `cached_tokens`.

    Attributes:
        input_tokens: Prompt tokens, cached ones included.
        output_tokens: Completion tokens.
        cached_tokens: How many of the prompt tokens were read from the provider's cache.
    """

    model_config = ConfigDict(frozen=True)

    input_tokens: int = Field(ge=0)
    output_tokens: int = Field(ge=0)
    cached_tokens: int = Field(default=0, ge=0)

    @model_validator(mode="after")
    def _cached_within_input(self) -> Self:
        if self.cached_tokens > self.input_tokens:
            raise ValueError(
                f"cached_tokens ({self.cached_tokens}) cannot exceed input_tokens ({self.input_tokens}): "
                "input_tokens counts the whole prompt, cached part included"
            )
        return self


FaultKind = Literal["error", "hang", "invalid_json", "truncated"]


class Fault(BaseModel):
    """A failure the server answers with instead of a completion.

    Build one with the class methods rather than by hand:
    `Fault.rate_limit()`, `Fault.server_error()`, `Fault.unauthorized()`, `Fault.error(status)`,
    `Fault.hang()`, `Fault.invalid_json()`, `Fault.truncated()`.

    Attributes:
        kind: `error` (an HTTP error status in the provider's error shape), `hang` (no answer until the
            client gives up or the server stops), `invalid_json` (status 200 with a body that is not JSON),
            `truncated` (status 200 whose body stops halfway and the connection closes).
        status: The HTTP status of an `error` fault.
        message: The error message put in the provider's error body.
        retry_after: Seconds sent in the `Retry-After` header, if any.
        should_retry: Sent as the `x-should-retry` header, which both SDKs obey over their own policy.
    """

    model_config = ConfigDict(frozen=True)

    kind: FaultKind
    status: int = Field(default=500, ge=400, le=599)
    message: str = "Injected fault."
    retry_after: float | None = Field(default=None, ge=0)
    should_retry: bool | None = None

    @classmethod
    def error(
        cls,
        status: int,
        message: str | None = None,
        *,
        retry_after: float | None = None,
        should_retry: bool | None = None,
    ) -> Fault:
        """An HTTP error with any 4xx/5xx status, in the provider's own error body shape.

        Args:
            status: The HTTP status; the SDKs pick their exception class from it.
            message: The error message; a generic one by default.
            retry_after: Seconds to send in a `Retry-After` header; none by default.
            should_retry: Send `x-should-retry: true/false`, which overrides the SDKs' retry policy.
        """
        return cls(
            kind="error",
            status=status,
            message=message or f"Injected error with status {status}.",
            retry_after=retry_after,
            should_retry=should_retry,
        )

    @classmethod
    def rate_limit(cls, retry_after: float | None = DEFAULT_RETRY_AFTER, message: str | None = None) -> Fault:
        """HTTP 429 with a `Retry-After` header; the SDKs raise `RateLimitError` once out of retries.

        Args:
            retry_after: Seconds to send in `Retry-After` (`None`: no header). Both SDKs wait this long
                before retrying; at 0 they fall back to their own backoff (0.5 s, 1 s, ...), and OpenAI's
                does not retry at all above 120 s.
            message: The error message; a generic one by default.
        """
        return cls.error(429, message or "Rate limit reached (injected).", retry_after=retry_after)

    @classmethod
    def server_error(cls, status: int = 500, message: str | None = None, *, should_retry: bool | None = None) -> Fault:
        """HTTP 5xx; the SDKs retry it, then raise `InternalServerError` (or a subclass).

        Args:
            status: A 5xx status, 500 by default.
            message: The error message; a generic one by default.
            should_retry: `False` sends `x-should-retry: false`, so the SDKs raise at once.

        Raises:
            ValueError: `status` is not 5xx.
        """
        if status < 500:
            raise ValueError(f"a server error has a 5xx status, not {status}; use Fault.error() for 4xx")
        return cls.error(status, message or "Internal server error (injected).", should_retry=should_retry)

    @classmethod
    def unauthorized(cls, message: str | None = None) -> Fault:
        """HTTP 401, as for a wrong API key; the SDKs raise `AuthenticationError` without retrying.

        Args:
            message: The error message; a generic one by default.
        """
        return cls.error(401, message or "Invalid API key (injected).")

    @classmethod
    def hang(cls) -> Fault:
        """Never answer: the client times out, or the server answers 503 when it stops."""
        return cls(kind="hang")

    @classmethod
    def invalid_json(cls) -> Fault:
        """HTTP 200 with `Content-Type: application/json` and a body that is not JSON."""
        return cls(kind="invalid_json")

    @classmethod
    def truncated(cls) -> Fault:
        """HTTP 200 whose body stops halfway through its `Content-Length`, then the connection closes."""
        return cls(kind="truncated")


class Reply(BaseModel):
    """One scripted answer.

    A script may also hold shorthands, turned into a `Reply` as it is read: a `str` is `Reply(text=...)`,
    a `dict` or a pydantic model instance is `Reply(data=...)`, a `ToolCall` is
    `Reply(tool_calls=[...])`, a `Fault` is `Reply(fault=...)`.

    Attributes:
        text: The assistant's text.
        data: Structured output, sent as JSON text content (what `response_format` / `output_config`
            asks the model for). A pydantic model instance is dumped to a dict.
        tool_calls: Tool calls; OpenAI gets `finish_reason="tool_calls"`, Anthropic `stop_reason="tool_use"`.
        usage: Token counts to report; by default about one token per four characters.
        latency: Seconds to wait before answering (on top of the server's global latency).
        fault: Fail this request instead of answering; excludes text, data, tool calls and usage.
    """

    model_config = ConfigDict(frozen=True)

    text: str | None = None
    data: dict[str, Any] | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    usage: TokenUsage | None = None
    latency: float = Field(default=0.0, ge=0)
    fault: Fault | None = None

    @field_validator("data", mode="before")
    @classmethod
    def _dump_models(cls, value: object) -> object:
        return value.model_dump(mode="json") if isinstance(value, BaseModel) else value

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if self.text is not None and self.data is not None:
            raise ValueError("a reply has either text or data (sent as JSON text), not both")
        if self.fault is not None and (
            self.text is not None or self.data is not None or self.tool_calls or self.usage is not None
        ):
            raise ValueError("a reply with a fault carries no text, data, tool calls or usage")
        return self

    @property
    def content(self) -> str | None:
        """The text content as sent: `text`, or `data` serialised as JSON, or `None`."""
        if self.data is not None:
            return json.dumps(self.data, ensure_ascii=False)
        return self.text


ReplyLike = Reply | Fault | ToolCall | BaseModel | str | dict[str, Any]
"""Anything a script may hold or a script function may return."""


def resolved_usage(reply: Reply) -> TokenUsage:
    """The usage of a reply about to be rendered: filled in once the reply is resolved, which rendering needs."""
    if reply.usage is None:
        raise ValueError("render() needs a resolved reply; pass it through ScriptRunner.resolve() first")
    return reply.usage


def as_reply(item: ReplyLike) -> Reply:
    """Turn a script item (a `Reply` or one of its shorthands) into a `Reply`."""
    if isinstance(item, Reply):
        return item
    if isinstance(item, Fault):
        return Reply(fault=item)
    if isinstance(item, ToolCall):
        return Reply(tool_calls=[item])
    if isinstance(item, str):
        return Reply(text=item)
    if isinstance(item, BaseModel):
        return Reply(data=item.model_dump(mode="json"))
    if isinstance(item, dict):
        return Reply(data=item)
    raise TypeError(
        f"a scripted reply must be a Reply, Fault, ToolCall, str, dict or pydantic model, not {type(item).__name__}"
    )
