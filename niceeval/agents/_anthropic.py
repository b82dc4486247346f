"""`anthropic_agent`: a model with tools over the Anthropic Messages API.

Structured output goes through a tool whose input is the data: `final_answer`, with the output type's schema.
Without other tools the model is forced to call it; with tools it must call one of them (`tool_choice=any`),
and calling `final_answer` ends the turn.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from niceeval._core.errors import UsageError
from niceeval._core.events import UsageEvent
from niceeval.agents._attachments import Attachment, anthropic_blocks
from niceeval.agents._model import Messages, ModelAgent, ModelAgentOptions, ModelOptions, ModelStep, model_ref
from niceeval.agents._schema import output_name, output_schema
from niceeval.agents._tools import ToolRequest, ToolResult, describe_all
from niceeval.providers import anthropic_client, release

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic
    from anthropic.types import Message

OUTPUT_TOOL = "final_answer"
"""The tool through which the model gives structured output."""


def anthropic_agent(
    model: str,
    *,
    system: str | None = None,
    tools: list[Callable[..., Any]] | None = None,
    output: type[Any] | None = None,
    base_url: str | None = None,
    api_key: str | None = None,
    options: ModelAgentOptions | None = None,
) -> ModelAgent:
    """A model with tools, over the Anthropic Messages API, as the agent under test.

    The same as `openai_agent` (see there), except for structured output, which the model gives as the input
    of a `final_answer` tool.

    Args:
        model: `anthropic/<name>`, e.g. `anthropic/claude-haiku-4-5`.
        system: The system prompt.
        tools: Python functions (sync or async) the model may call.
        output: A pydantic model for structured replies; `t.send(..., output=)` overrides it.
        base_url: An Anthropic-compatible endpoint; `ANTHROPIC_BASE_URL` or the SDK's default otherwise.
        api_key: The key; `ANTHROPIC_API_KEY` otherwise.
        options: The loop and call settings (`max_steps`, `temperature`, `max_tokens` (4096 by default: the API
            requires a value), `timeout`, `retry`, `tool_validator`, `checkpoints`): see `ModelAgentOptions`.

    Raises:
        UsageError: The model string has no `anthropic/` prefix, a tool or the output type cannot be described,
            or a tool is named `final_answer`.
    """
    described = describe_all(tools or [])
    if OUTPUT_TOOL in described:
        raise UsageError(f"the tool name {OUTPUT_TOOL!r} is reserved for structured output; rename the tool.")
    resolved = ModelOptions(
        model=model_ref("anthropic", model),
        system=system,
        tools=described,
        output=output,
        base_url=base_url,
        api_key=api_key,
        agent=options if options is not None else ModelAgentOptions(),
    )
    return ModelAgent(resolved, AnthropicDialect)


class AnthropicDialect:
    """Messages API requests and messages, over one `AsyncAnthropic` client."""

    system_in_messages = False

    def __init__(self, options: ModelOptions) -> None:
        self._options = options
        self._client: AsyncAnthropic = anthropic_client(
            key=options.api_key, url=options.base_url, timeout=options.timeout
        )

    async def complete(self, messages: Messages, output: type[Any] | None) -> ModelStep:
        """Ask for the next step of `messages`."""
        options = self._options
        request: dict[str, Any] = {"model": options.model.name, "max_tokens": options.max_tokens, "messages": messages}
        if options.system:
            request["system"] = options.system
        tools = [
            {"name": t.name, "description": t.description, "input_schema": t.parameters} for t in options.tools.values()
        ]
        if output is not None:
            description = f"Give your final answer as {output_name(output)}. Call this once, when you are done."
            tools.append({"name": OUTPUT_TOOL, "description": description, "input_schema": output_schema(output)})
            only_output = len(tools) == 1
            request["tool_choice"] = {"type": "tool", "name": OUTPUT_TOOL} if only_output else {"type": "any"}
        if tools:
            request["tools"] = tools
        if options.temperature is not None:
            request["temperature"] = options.temperature
        message = await self._client.messages.create(**request)
        return self._step(message, structured=output is not None)

    def add_user(self, messages: Messages, text: str, files: Sequence[Attachment] = ()) -> None:
        """Append a user message, answering tool calls the last turn left open and merging with a user message."""
        content: list[dict[str, Any]] = []
        last = messages[-1] if messages else None
        if last is not None and last["role"] == "assistant":
            content += [
                {"type": "tool_result", "tool_use_id": block["id"], "content": _closing_result(block)}
                for block in _blocks(last)
                if block.get("type") == "tool_use"
            ]
        elif last is not None and last["role"] == "user":
            # The last turn ended on tool results (max_steps): one user message, as the API alternates roles.
            content, messages[-1:] = _blocks(last), []
        messages.append(
            {"role": "user", "content": [*content, *anthropic_blocks(files), {"type": "text", "text": text}]}
        )

    def add_tool_results(self, messages: Messages, results: list[ToolResult]) -> None:
        """Append one user message with a `tool_result` block per result."""
        blocks = [
            {
                "type": "tool_result",
                "tool_use_id": r.id,
                "content": r.content,
                **({"is_error": True} if r.is_error else {}),
            }
            for r in results
        ]
        messages.append({"role": "user", "content": blocks})

    async def close(self) -> None:
        """Give the client back (closed unless the suite shares it)."""
        await release(self._client)

    def _step(self, message: Message, *, structured: bool) -> ModelStep:
        kept: list[dict[str, Any]] = []
        texts: list[str] = []
        requests: list[ToolRequest] = []
        data: Any = None
        for block in message.content:
            if block.type == "text":
                if block.text:
                    texts.append(block.text)
                    kept.append({"type": "text", "text": block.text})
            elif block.type == "tool_use":
                kept.append({"type": "tool_use", "id": block.id, "name": block.name, "input": block.input})
                if structured and block.name == OUTPUT_TOOL:
                    data = block.input
                else:
                    requests.append(ToolRequest(id=block.id, name=block.name, arguments=dict(block.input)))
            else:
                kept.append(block.model_dump(mode="json", exclude_none=True))
        return ModelStep(
            text=json.dumps(data, ensure_ascii=False) if data is not None else "\n".join(texts),
            tool_requests=tuple(requests),
            message={"role": "assistant", "content": kept} if kept else None,
            usage=self._usage(message),
            data=data,
        )

    def _usage(self, message: Message) -> UsageEvent:
        usage = message.usage
        # Anthropic already counts cache reads apart; tokens written to the cache are input not served from it.
        return UsageEvent(
            model=str(self._options.model),
            input_tokens=usage.input_tokens + (usage.cache_creation_input_tokens or 0),
            output_tokens=usage.output_tokens,
            cache_read_tokens=usage.cache_read_input_tokens or 0,
        )


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [block for block in content or [] if isinstance(block, dict)]


def _closing_result(block: dict[str, Any]) -> str:
    # Every tool_use needs a tool_result before the conversation goes on; these calls ended the turn unrun.
    return "Received." if block.get("name") == OUTPUT_TOOL else "Not run: the turn ended with the final answer."
