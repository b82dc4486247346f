"""The tool-calling loop shared by the model-backed agents; each provider plugs in as a `Dialect`.

One turn: the user message joins the conversation, then the model is called (through `providers.call`, which
retries and rate-limits) until it answers without asking for tools, each tool call running and being recorded
as it goes, or until `max_steps` model calls have been spent. The conversation is saved to the checkpoint
store after each turn; a turn that raises leaves the stored conversation as it was.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from niceeval._core.errors import UsageError
from niceeval._core.events import ErrorEvent, EventLog, MessageEvent, UsageEvent
from niceeval.agents._attachments import Attachment
from niceeval.agents._checkpoints import CheckpointStore, SQLiteCheckpoints
from niceeval.agents._function import structure
from niceeval.agents._protocol import EXPERIMENT_MODEL, AgentReply
from niceeval.agents._schema import output_schema
from niceeval.agents._tools import Tool, ToolRequest, ToolResult, ToolValidator, run_tool
from niceeval.providers import ModelRef, Provider, RetryPolicy, call, parse_model, sdk_ready

Messages = list[dict[str, Any]]


@dataclass(frozen=True, kw_only=True, slots=True)
class ModelAgentOptions:
    """How a model agent runs its tool loop and calls its model: what most agents leave at the defaults.

    The model, system prompt, tools, output type and endpoint are the factories' own arguments
    (`openai_agent("openai/gpt-5-mini", system=..., tools=[...])`); the rest goes here:
    `openai_agent(..., options=ModelAgentOptions(max_steps=4, temperature=0))`.

    Attributes:
        max_steps: Model calls allowed per turn; when spent, the turn fails with an `error` event.
        temperature: Sampling temperature; the API's default when None.
        max_tokens: The most tokens the model may write per response (sent to Anthropic, which requires it).
        timeout: Seconds to wait for each model response.
        retry: How rate limits and server errors are retried; `RetryPolicy()` by default.
        tool_validator: `(name, arguments) -> reason | None`, called before each tool runs; a reason rejects the
            call, which is recorded as failed and reported to the model.
        checkpoints: Where conversations are kept between turns: a SQLite file (`.niceeval/checkpoints.sqlite`)
            by default, so a revived session continues from storage; `MemoryCheckpoints()` keeps them in the process.
    """

    max_steps: int = 10
    temperature: float | None = None
    max_tokens: int = 4096
    timeout: float = 60.0
    retry: RetryPolicy | None = None
    tool_validator: ToolValidator | None = None
    checkpoints: CheckpointStore | None = None

    def __post_init__(self) -> None:
        for name in ("max_steps", "max_tokens"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise UsageError(f"ModelAgentOptions({name}=...) must be a positive integer, got {value!r}.")
        if isinstance(self.timeout, bool) or not isinstance(self.timeout, int | float) or self.timeout <= 0:
            raise UsageError(f"ModelAgentOptions(timeout=...) is seconds, a positive number; got {self.timeout!r}.")


@dataclass(frozen=True, kw_only=True, slots=True)
class ModelOptions:
    """Everything a model agent's session needs, resolved by `openai_agent` / `anthropic_agent`."""

    model: ModelRef
    system: str | None = None
    tools: dict[str, Tool] = field(default_factory=dict)
    output: type[Any] | None = None
    base_url: str | None = None
    api_key: str | None = None
    agent: ModelAgentOptions = field(default_factory=ModelAgentOptions)

    def __post_init__(self) -> None:
        if not isinstance(self.agent, ModelAgentOptions):
            raise UsageError(
                f"options= takes ModelAgentOptions(...), got {type(self.agent).__name__}; "
                "e.g. options=ModelAgentOptions(max_steps=4)."
            )
        if self.output is not None:
            output_schema(self.output)

    @property
    def max_steps(self) -> int:
        return self.agent.max_steps

    @property
    def temperature(self) -> float | None:
        return self.agent.temperature

    @property
    def max_tokens(self) -> int:
        return self.agent.max_tokens

    @property
    def timeout(self) -> float:
        return self.agent.timeout

    @property
    def retry(self) -> RetryPolicy | None:
        return self.agent.retry

    @property
    def tool_validator(self) -> ToolValidator | None:
        return self.agent.tool_validator


@dataclass(frozen=True, kw_only=True, slots=True)
class ModelStep:
    """One model response, in the provider-neutral form the loop works with."""

    text: str
    tool_requests: tuple[ToolRequest, ...] = ()
    message: dict[str, Any] | None = None
    """The assistant message to keep in the conversation (None: nothing to keep)."""
    usage: UsageEvent | None = None
    data: Any = None
    """Structured output the model returned as data rather than text (Anthropic's output tool)."""


class Dialect(Protocol):
    """One provider's request and message formats, over a client opened for one session."""

    system_in_messages: bool
    """Whether the API takes `system` messages among the others (Chat Completions does, Anthropic does not)."""

    async def complete(self, messages: Messages, output: type[Any] | None) -> ModelStep:
        """Ask the model for the next step of the conversation `messages`."""
        ...

    def add_user(self, messages: Messages, text: str, files: Sequence[Attachment] = ()) -> None:
        """Append a user message to `messages`."""
        ...

    def add_tool_results(self, messages: Messages, results: list[ToolResult]) -> None:
        """Append the results of the tool calls of the last assistant message."""
        ...

    async def close(self) -> None:
        """Close the client."""
        ...


Connect = Callable[[ModelOptions], Dialect]


def model_ref(provider: Provider, model: str) -> ModelRef:
    """Parse the `provider/name` model string of a `{provider}_agent`.

    Raises:
        UsageError: The string has no known provider prefix, or names another provider.
    """
    ref = parse_model(model)
    if ref.provider != provider:
        raise UsageError(
            f"{provider}_agent needs a {provider}/... model, got {model!r}; use {ref.provider}_agent for it."
        )
    return ref


class ModelAgent:
    """A model with tools as the agent under test; sessions keep their conversation in `checkpoints`."""

    def __init__(self, options: ModelOptions, connect: Connect) -> None:
        self.options = options
        checkpoints = options.agent.checkpoints
        self.checkpoints: CheckpointStore = checkpoints if checkpoints is not None else SQLiteCheckpoints()
        self._connect = connect

    @property
    def model(self) -> str:
        """The model, as `provider/name`."""
        return str(self.options.model)

    async def open(self, session_id: str, log: EventLog) -> ModelSession:
        """Open (or revive, from the checkpoint store) the conversation `session_id`."""
        messages = await self.checkpoints.load(session_id) or []
        options = self.options
        chosen = EXPERIMENT_MODEL.get()
        if chosen is not None and chosen != str(options.model):  # the experiment's model: one agent, many setups
            options = replace(options, model=model_ref(options.model.provider, chosen))
        await sdk_ready(options.model.provider)  # the SDK loads off the loop: other evals keep running
        return ModelSession(session_id, log, options, self._connect(options), self.checkpoints, messages)


class ModelSession:
    """One conversation with a model-backed agent."""

    def __init__(
        self,
        session_id: str,
        log: EventLog,
        options: ModelOptions,
        dialect: Dialect,
        checkpoints: CheckpointStore,
        messages: Messages,
    ) -> None:
        self.id = session_id
        self.log = log
        self.messages = messages
        """The conversation so far, as the provider's API takes it."""
        self._options = options
        self._dialect = dialect
        self._checkpoints = checkpoints

    async def send(
        self,
        message: str,
        *,
        output: type[Any] | None = None,
        files: Sequence[Attachment] = (),
        history: Sequence[dict[str, str]] | None = None,
    ) -> AgentReply:
        """Send a user message (with `files` as content parts) and run the tool loop until the model answers.

        Raises:
            ProviderError: The model could not be reached (after retries); the message names the model.
        """
        output = output if output is not None else self._options.output
        if output is not None:
            output_schema(output)
        described: dict[str, Any] = {"files": [f.described() for f in files]} if files else {}
        if history is not None:
            described["history"] = list(history)
        self.log.emit(MessageEvent(role="user", text=message, data=described or None))
        messages = list(self.messages)
        for earlier in history or ():
            if earlier["role"] == "system" and not self._dialect.system_in_messages:
                raise UsageError(
                    f"{self._options.model}: a system message in t.send([...]) cannot be sent to this provider; "
                    "give the agent its system prompt (system=...) instead."
                )
            messages.append({"role": earlier["role"], "content": earlier["content"]})
        self._dialect.add_user(messages, message, files)
        reply = await self._turn(messages, output)
        self.messages = messages
        await self._checkpoints.save(self.id, messages)
        self.log.emit(MessageEvent(role="assistant", text=reply.text, data=reply.data))
        return reply

    async def close(self) -> None:
        """Close the model client; the conversation stays in the checkpoint store."""
        await self._dialect.close()

    async def _turn(self, messages: Messages, output: type[Any] | None) -> AgentReply:
        options = self._options
        text = ""
        for _ in range(options.max_steps):
            step = await call(options.model, lambda: self._dialect.complete(messages, output), policy=options.retry)
            if step.usage is not None:
                self.log.emit(step.usage)
            if step.message is not None:
                messages.append(step.message)
            text = step.text
            if step.data is not None or not step.tool_requests:
                return structure(AgentReply(text=step.text, data=step.data), output, self.log)
            results = [await run_tool(options.tools, r, self.log, options.tool_validator) for r in step.tool_requests]
            self._dialect.add_tool_results(messages, results)
        self.log.emit(
            ErrorEvent(
                message=f"{options.model}: no final answer after max_steps={options.max_steps} model calls "
                "(the model kept calling tools); raise max_steps or check the tools' results",
                error_type="MaxStepsExceeded",
            )
        )
        return AgentReply(text=text, status="failed")
