"""`openai_agent`: a model with tools over OpenAI Chat Completions (and any API compatible with it)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from niceeval._core.events import UsageEvent
from niceeval.agents._attachments import Attachment, openai_parts
from niceeval.agents._model import Messages, ModelAgent, ModelAgentOptions, ModelOptions, ModelStep, model_ref
from niceeval.agents._schema import output_name, output_schema, strict_schema
from niceeval.agents._tools import ToolRequest, ToolResult, describe_all
from niceeval.providers import ProviderError, chat_completion, openai_client, release

if TYPE_CHECKING:
    from openai import AsyncOpenAI
    from openai.types.chat import ChatCompletion


def openai_agent(
    model: str,
    *,
    system: str | None = None,
    tools: list[Callable[..., Any]] | None = None,
    output: type[Any] | None = None,
    base_url: str | None = None,
    api_key: str | None = None,
    options: ModelAgentOptions | None = None,
) -> ModelAgent:
    """A model with tools, over OpenAI Chat Completions, as the agent under test.

    Each tool call is recorded as an `action.called` event and each model response as a `usage` event. The
    conversation is saved to the checkpoint store after each turn, and a session opened with an existing id (as
    `t.revive()` does) continues it from there.

    Args:
        model: `openai/<name>`, e.g. `openai/gpt-5-mini`.
        system: The system prompt.
        tools: Python functions (sync or async) the model may call; described from their signatures and
            Google-style docstrings.
        output: A pydantic model for structured replies (strict `json_schema`); `t.send(..., output=)` overrides it.
        base_url: An OpenAI-compatible endpoint; `OPENAI_BASE_URL` or the SDK's default otherwise.
        api_key: The key; `OPENAI_API_KEY` otherwise.
        options: The loop and call settings (`max_steps`, `temperature`, `timeout`, `retry`, `tool_validator`,
            `checkpoints`, ...): see `ModelAgentOptions`.

    Raises:
        UsageError: The model string has no `openai/` prefix, or a tool or the output type cannot be described.
    """
    resolved = ModelOptions(
        model=model_ref("openai", model),
        system=system,
        tools=describe_all(tools or []),
        output=output,
        base_url=base_url,
        api_key=api_key,
        agent=options if options is not None else ModelAgentOptions(),
    )
    return ModelAgent(resolved, OpenAIDialect)


class OpenAIDialect:
    """Chat Completions requests and messages, over one `AsyncOpenAI` client."""

    system_in_messages = True

    def __init__(self, options: ModelOptions) -> None:
        self._options = options
        self._client: AsyncOpenAI = openai_client(key=options.api_key, url=options.base_url, timeout=options.timeout)

    async def complete(self, messages: Messages, output: type[Any] | None) -> ModelStep:
        """Ask for the next step of `messages`."""
        options = self._options
        system = [{"role": "system", "content": options.system}] if options.system else []
        request: dict[str, Any] = {"model": options.model.name, "messages": [*system, *messages]}
        if options.tools:
            request["tools"] = [
                {
                    "type": "function",
                    "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
                }
                for t in options.tools.values()
            ]
        if output is not None:
            schema = strict_schema(output_schema(output))
            request["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": output_name(output), "schema": schema, "strict": True},
            }
        if options.temperature is not None:
            request["temperature"] = options.temperature
        completion = await chat_completion(self._client, request, timeout=options.timeout)
        return self._step(completion)

    def add_user(self, messages: Messages, text: str, files: Sequence[Attachment] = ()) -> None:
        """Append a user message (with files: content parts)."""
        messages.append({"role": "user", "content": openai_parts(text, files) if files else text})

    def add_tool_results(self, messages: Messages, results: list[ToolResult]) -> None:
        """Append one `tool` message per result."""
        messages.extend({"role": "tool", "tool_call_id": r.id, "content": r.content} for r in results)

    async def close(self) -> None:
        """Give the client back (closed unless the suite shares it)."""
        await release(self._client)

    def _step(self, completion: ChatCompletion) -> ModelStep:
        from openai.types.chat import ChatCompletionMessageFunctionToolCall

        model = str(self._options.model)
        if not completion.choices:
            raise ProviderError("parse_error", f"{model}: the response has no choices", model=model)
        message = completion.choices[0].message
        calls = [c for c in message.tool_calls or [] if isinstance(c, ChatCompletionMessageFunctionToolCall)]
        kept: dict[str, Any] = {"role": "assistant", "content": message.content}
        if calls:
            kept["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.function.name, "arguments": c.function.arguments},
                }
                for c in calls
            ]
        elif message.content is None:
            kept["content"] = message.refusal or ""
        return ModelStep(
            text=message.content or message.refusal or "",
            tool_requests=tuple(
                ToolRequest(id=c.id, name=c.function.name, arguments=_arguments(c.function.arguments)) for c in calls
            ),
            message=kept,
            usage=self._usage(completion),
        )

    def _usage(self, completion: ChatCompletion) -> UsageEvent | None:
        usage = completion.usage
        if usage is None:
            return None
        details = usage.prompt_tokens_details
        cached = (details.cached_tokens or 0) if details is not None else 0
        # `prompt_tokens` counts the cached part too; the event counts it apart, in `cache_read_tokens`.
        return UsageEvent(
            model=str(self._options.model),
            input_tokens=max(0, usage.prompt_tokens - cached),
            output_tokens=usage.completion_tokens,
            cache_read_tokens=cached,
        )


def _arguments(raw: str) -> dict[str, Any] | str:
    try:
        parsed = json.loads(raw or "{}")
    except json.JSONDecodeError:
        return raw
    return parsed if isinstance(parsed, dict) else raw
