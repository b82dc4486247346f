"""The provider-neutral view of a request, which scripts read and `server.requests` records."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from niceeval.testing._replies import ToolCall

Provider = Literal["openai", "anthropic", "scripted"]
Api = Literal["chat.completions", "responses", "messages", "scripted"]
Role = Literal["system", "developer", "user", "assistant", "tool"]


class Message(BaseModel):
    """One message of the conversation, the same for both providers.

    Anthropic's top-level `system` becomes a leading `system` message, and each of its `tool_result`
    blocks becomes a `tool` message, as in OpenAI's format.

    Attributes:
        role: `system`, `developer`, `user`, `assistant` or `tool` (a tool result).
        content: The text of the message; text parts are joined with newlines, other parts (images,
            documents) are left out (they stay in `LLMRequest.body`).
        tool_calls: The tool calls of an assistant message.
        tool_call_id: For a `tool` message, the id of the call it answers.
    """

    model_config = ConfigDict(frozen=True)

    role: Role
    content: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    tool_call_id: str | None = None


class Tool(BaseModel):
    """A tool offered to the model.

    Attributes:
        name: The tool's name.
        description: Its description, `""` if none.
        parameters: The JSON schema of its arguments (OpenAI `parameters`, Anthropic `input_schema`).
    """

    model_config = ConfigDict(frozen=True)

    name: str
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=dict)


class LLMRequest(BaseModel):
    """A request as a script sees it and as `server.requests` records it.

    Attributes:
        provider: Whose API received it: `openai` (`/v1/chat/completions` or `/v1/responses`), `anthropic`
            (`/v1/messages`), or `scripted` (in process, through `ScriptedModel`).
        api: Which endpoint: `chat.completions`, `responses` (OpenAI), `messages` (Anthropic) or `scripted`.
        model: The requested model name.
        messages: The conversation, system prompt first if there is one.
        tools: The tools offered.
        response_format: The structured-output request, if any: OpenAI's `response_format` (unless it is
            `{"type": "text"}`), the Responses API's `text.format`, or Anthropic's `output_config.format`.
        body: The request's JSON body, exactly as received.
        headers: The HTTP headers, names in lower case (e.g. `authorization`, `x-stainless-retry-count`).
    """

    model_config = ConfigDict(frozen=True)

    provider: Provider = "scripted"
    api: Api = "scripted"
    model: str = "scripted"
    messages: list[Message] = Field(default_factory=list)
    tools: list[Tool] = Field(default_factory=list)
    response_format: dict[str, Any] | None = None
    body: dict[str, Any] = Field(default_factory=dict)
    headers: dict[str, str] = Field(default_factory=dict)

    @classmethod
    def from_prompt(cls, prompt: str, *, system: str | None = None, model: str = "scripted") -> LLMRequest:
        """A request holding one user message (after a system message, if given)."""
        messages = [Message(role="system", content=system)] if system is not None else []
        return cls(model=model, messages=[*messages, Message(role="user", content=prompt)])

    @property
    def system(self) -> str:
        """The text of the system and developer messages, joined with newlines."""
        return "\n".join(m.content for m in self.messages if m.role in ("system", "developer"))

    @property
    def last_user_text(self) -> str:
        """The text of the last user message, `""` if there is none."""
        return next((m.content for m in reversed(self.messages) if m.role == "user"), "")

    @property
    def stream(self) -> bool:
        """Whether the client asked for a streamed (server-sent events) answer."""
        return self.body.get("stream") is True

    @property
    def output_schema(self) -> dict[str, Any] | None:
        """The JSON schema the reply must follow, when structured output was asked for with one."""
        fmt = self.response_format
        if fmt is None or fmt.get("type") != "json_schema":
            return None
        # Chat Completions nests the schema one level deeper: {"type": "json_schema", "json_schema": {"schema": ...}};
        # the Responses API and Anthropic put it beside the type.
        nested = fmt.get("json_schema")
        holder = nested if isinstance(nested, dict) else fmt
        schema = holder.get("schema") if isinstance(holder, dict) else None
        return schema if isinstance(schema, dict) else None


class RequestShapeError(ValueError):
    """The request body does not have the shape of the provider's API; answered with a 400."""


@contextmanager
def shape_checked() -> Iterator[None]:
    """Building the neutral request from a body: a field of the wrong type is the body's shape error (a 400)."""
    try:
        yield
    except ValidationError as exc:
        raise RequestShapeError(str(exc)) from exc


def tool_of(name: object, description: object, parameters: object) -> Tool:
    """A tool from a body's definition: a missing description is `""`, missing parameters are `{}`."""
    return Tool.model_validate({"name": name, "description": description or "", "parameters": parameters or {}})


_TEXT_PARTS = ("text", "input_text", "output_text")


def text_of(content: object) -> str:
    """The text of a message content: a string, or the text parts of a list of parts joined by newlines.

    Text parts are `text` (Chat Completions, Anthropic) and `input_text` / `output_text` (Responses API).
    """
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            part["text"]
            for part in content
            if isinstance(part, dict) and part.get("type") in _TEXT_PARTS and isinstance(part.get("text"), str)
        )
    raise RequestShapeError(f"message content must be a string or a list of parts, not {type(content).__name__}")
