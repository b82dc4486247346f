"""A conversation with the agent under test: sessions opened lazily, revived by id, answered when parked.

Each conversation is built with what it needs (`ConversationSetup`: the agent, the run's log, the scope its turns
record with); what it last exchanged is kept in a leaf `Exchange` that the judge reads without holding it.
"""

from __future__ import annotations

import inspect
import json
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from niceeval._core.assertion import Matcher
from niceeval._core.errors import UsageError, caller_location
from niceeval._core.events import ErrorEvent, Event, EventLog, MessageEvent, UsageEvent, latencies
from niceeval._core.settings import Price
from niceeval._core.values import short
from niceeval._eval.checks import Check
from niceeval._eval.efficiency import Usage, usage_of
from niceeval._eval.observe import EventSelector, ToolCall, tool_calls_of
from niceeval._eval.scoped import waiting_for_input
from niceeval._eval.scopes import ScopeAssertions, ScopeHost
from niceeval._eval.turn_changes import diff_of, measured
from niceeval.agents import Agent, AgentSession, Attachment, FunctionAgent, TurnStatus
from niceeval.agents._runtime import load_attachments
from niceeval.expect import equals, matches
from niceeval.providers import prices_loaded, prices_ready

if TYPE_CHECKING:
    from collections.abc import Coroutine

    from niceeval.sandbox import Diff, Sandbox, Stretch


@dataclass(frozen=True, kw_only=True, slots=True)
class Turn(ScopeAssertions):
    """One exchange with the agent: what it answered, its structured data, and what happened meanwhile.

    Every scoped assertion of `t` works on a turn too, over only this turn's events:
    `turn.called_tool("search")`, `turn.check(includes("refund"))`, `turn.judge.rubric(...)`; reports name it
    (`turn 2: called_tool('search')`).
    """

    message: str
    """The agent's reply text."""
    data: Any = None
    """Structured reply (a pydantic model, dict or list) when the agent returned one."""
    events: tuple[Event, ...] = ()
    """The events emitted during this turn, in order."""
    status: TurnStatus = "completed"
    """`completed`, `failed`, or `waiting` (the agent asked for human input: answer with `t.respond`)."""
    usage: Usage = field(default_factory=Usage)
    """Tokens and cost of this turn's model calls."""
    number: int = 0
    """1 for the session's first turn, 2 for the next, ... (0 for a turn not made by `t.send`)."""
    session_number: int = 1
    """Which session of the eval: 1 for the first, 2 after one `t.new_session()`, ..."""
    asked: str | None = None
    """The message sent for this turn (None for a list of chat messages or a `respond` value that was not text)."""
    _host: ScopeHost | None = field(default=None, repr=False, compare=False)
    _changes: tuple[Stretch, ...] | None = field(default=None, repr=False, compare=False)
    """The workspace before and after each exchange of the turn; None outside sandbox evals."""

    @property
    def tool_calls(self) -> list[ToolCall]:
        """This turn's tool calls, in order, typed: name, input, output, status, duration."""
        return tool_calls_of(self.events)

    def diff(self) -> Coroutine[Any, Any, Diff]:
        """Sandbox evals: what this turn changed in the workspace (`await turn.diff()`), from just before it was
        sent to its reply; the eval's own writes before or after it are not in it."""
        return diff_of(self._changes, f"turn {self.number}: turn.diff()")

    @property
    def latency(self) -> float | None:
        """Seconds the agent took to answer (a turn with follow-ups: the sum of its exchanges); None when the
        agent recorded no reply."""
        measured = latencies(self.events)
        return sum(measured) if measured else None

    @property
    def first_token(self) -> float | None:
        """Seconds to the first streamed token of the reply, when the adapter streams and reports it."""
        found = [e.first_token for e in self.events if isinstance(e, MessageEvent) and e.first_token is not None]
        return found[0] if found else None

    def output_equals(self, expected: object) -> Check:
        """Check that `turn.data` deeply equals `expected` (a gate, like `t.check(turn.data, equals(...))`)."""
        return self._check_data(equals(expected).label("output_equals"))

    def output_matches(self, schema: Any) -> Check:
        """Check that `turn.data` validates against `schema` (pydantic model or type, or a JSON Schema dict)."""
        return self._check_data(matches(schema).label("output_matches"))

    def _check_data(self, matcher: Matcher) -> Check:
        host = self._bound_host("turn.output_equals/output_matches")
        return host.checks.record(self.data, matcher, caller_location(2), required=False, verb="check")

    def _scope_host(self) -> ScopeHost | None:
        return self._host

    def _scope_label(self) -> str:
        where = f"turn {self.number}"
        return where if self.session_number == 1 else f"session {self.session_number} {where}"

    def _scope_select(self) -> EventSelector:
        events = self.events
        return lambda _: events

    def _scope_reply(self) -> tuple[str, str | None]:
        return self.message, self.asked


Message = str | Sequence[Mapping[str, str]]
"""What `t.send` takes: the user's text, or a chat (`[{"role": "user", "content": "..."}, ...]`) ending with it."""
_ROLES = ("system", "user", "assistant")


def split_chat(message: object, where: str) -> tuple[list[dict[str, str]] | None, str]:
    """`(earlier messages, the last user text)` of a chat list, or `(None, text)` for a string; a usage error
    saying what to write for anything else."""
    if isinstance(message, str):
        return None, message
    example = 'e.g. [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}, ...]'
    if not isinstance(message, list | tuple) or not message:
        raise UsageError(f"{where} takes the message as a string or a list of chat messages, got {short(message)}.")
    chat: list[dict[str, str]] = []
    for position, item in enumerate(message, start=1):
        if (
            not isinstance(item, Mapping)
            or item.get("role") not in _ROLES
            or not isinstance(item.get("content"), str)
            or set(item) - {"role", "content"}
        ):
            raise UsageError(
                f"{where}: message {position} must be {{'role': 'system' | 'user' | 'assistant', 'content': text}}, "
                f"got {short(item)}; {example}"
            )
        chat.append({"role": str(item["role"]), "content": str(item["content"])})
    if chat[-1]["role"] != "user":
        raise UsageError(f"{where}: a chat must end with the user's message (the one sent now); {example}")
    return chat[:-1], chat[-1]["content"]


def attachments_of(
    message: Message, files: Sequence[str | Path | bytes | Attachment] | None, where: str
) -> list[Attachment]:
    """The files sent with `message`, loaded; a malformed chat or file is an error here, at the eval's line."""
    split_chat(message, where)
    return load_attachments(files, where) if files else []


def _stamp_latency(events: Sequence[Event], seconds: float) -> None:
    """Record the turn's duration on its reply (the last assistant message), so the run's record keeps it; an
    adapter that knows the turn's own duration (a production trace an online eval scores) keeps its figure."""
    for event in reversed(events):
        if isinstance(event, MessageEvent) and event.role == "assistant":
            if event.latency is None:
                event.latency = seconds
            return


def events_in(spans: Sequence[tuple[int, int]], events: Sequence[Event]) -> list[Event]:
    """The events in the stretches `spans` (`(start, end)` indices) of a run's `events`."""
    return [e for start, end in spans for e in events[start:end]]


def resolve_agent(spec: object) -> Agent:
    """An agent adapter as given, or a function wrapped as a function agent."""
    if spec is None:
        raise UsageError(
            "t.send() needs an agent: set `agent=` in niceeval.config.py (define_config(agent=my_fn)) "
            "or on the eval (@define_eval(agent=my_fn))."
        )
    if isinstance(spec, Agent):
        return spec
    if not callable(spec):
        raise UsageError(f"the agent must be a function or an agent adapter, got {short(spec)}.")
    return FunctionAgent(spec)


@dataclass(kw_only=True, slots=True)
class ConversationSetup:
    """What every conversation of a run is built with.

    Built once per run and never changed; not frozen only because a frozen dataclass is slower to build.
    """

    agent: object
    """The agent under test as configured: an adapter, or a function (wrapped when first sent to)."""
    log: EventLog
    eval_id: str
    scope: ScopeHost
    """What the conversation's turns and sessions record their assertions with."""
    pricing: Mapping[str, Price] = field(default_factory=dict)
    followup_model: str | None = None
    sandbox: Sandbox | None = None
    """A sandbox eval's workspace: each turn snapshots it before and after (`turn.diff()`)."""


@dataclass(kw_only=True, slots=True)
class Exchange:
    """What a conversation last exchanged with the agent (a leaf: it refers to nothing of the run)."""

    reply: str = ""
    """The agent's last reply ("" before the first turn)."""
    asked: str | None = None
    """What the eval last sent with `t.send` (follow-up answers and `t.respond` values are not); None before."""
    status: TurnStatus = "completed"
    """How the last turn ended (`waiting`: the agent asked for input)."""


class Conversation:
    """One conversation (session) with the agent; `t.send` uses the eval's current one.

    Args:
        setup: What every conversation of the run shares.
        number: 1 for the eval's first session, 2 for the next `t.new_session()`, ...
        exchange: Where it keeps what it last exchanged (read by the run's judge as the current reply).
    """

    def __init__(self, setup: ConversationSetup, *, number: int, exchange: Exchange) -> None:
        self.setup = setup
        self.number = number
        """1 for the eval's first session, 2 for the next `t.new_session()`, ..."""
        self.exchange = exchange
        self.turns = 0
        """How many turns the eval has sent in this session (follow-up answers are part of their turn)."""
        self.spans: list[tuple[int, int]] = []
        """The stretches of the run's event log this session's turns emitted: `(start, end)` indices."""
        self.changes: list[Stretch] | None = None if setup.sandbox is None else []
        """The workspace before and after each exchange of this session (sandbox evals only)."""
        self._log = setup.log
        self._pricing = setup.pricing
        self._id: str | None = None
        self._session: AgentSession | None = None
        self._agent: Agent | None = None

    @property
    def reply(self) -> str:
        """The agent's last reply in this conversation ("" before the first turn)."""
        return self.exchange.reply

    @property
    def asked(self) -> str | None:
        """What the eval last sent with `t.send` in this conversation; None before the first."""
        return self.exchange.asked

    @property
    def id(self) -> str:
        """The session id: unique across processes (checkpoint stores outlive runs), made when first needed."""
        if self._id is None:
            self._id = f"{self.setup.eval_id}#{uuid.uuid4().hex[:12]}"
        return self._id

    async def _open(self) -> AgentSession:
        if self._session is None:
            self._agent = self._agent or resolve_agent(self.setup.agent)
            self._session = await self._agent.open(self.id, self._log)
        return self._session

    async def send(
        self, text: Message, output: type[Any] | None = None, files: Sequence[Attachment] = (), deps: Any = None
    ) -> Turn:
        history, text = split_chat(text, "t.send()")
        session = await self._open()
        extra: dict[str, Any] = {}
        if deps is not None:
            if "deps" not in inspect.signature(session.send).parameters:
                raise UsageError(
                    f"t.send(deps=...): this agent ({type(self._agent).__name__}) takes no dependencies; "
                    "pydantic_ai_agent (deps), openai_agents_agent (context) and langgraph_agent (config) do."
                )
            extra["deps"] = deps
        if history is not None:
            if "history" not in inspect.signature(session.send).parameters:
                raise UsageError(
                    f"t.send([...messages]): this agent ({type(self._agent).__name__}) takes one message; "
                    "openai_agent, anthropic_agent and function agents (which get the list) take a conversation."
                )
            extra["history"] = history
        if files:
            if "files" not in inspect.signature(session.send).parameters:
                raise UsageError(
                    f"t.send(files=...): this agent ({type(self._agent).__name__}) cannot take files; openai_agent, "
                    "anthropic_agent and function agents (which read session.files) can."
                )
            extra["files"] = files
        start = len(self._log.events)
        began = time.perf_counter()
        try:
            reply, changed = await measured(self.setup.sandbox, partial(session.send, text, output=output, **extra))
        except Exception as exc:  # the run fails with this exception; the stream shows where it happened
            self._log.emit(ErrorEvent(message=f"{type(exc).__name__}: {exc}", error_type=type(exc).__name__))
            raise
        if self.changes is not None and changed is not None:
            self.changes.append(changed)
        _stamp_latency(self._log.events[start:], time.perf_counter() - began)
        self.spans.append((start, len(self._log.events)))
        events = tuple(self._log.events[start:])
        unpriced = () if prices_loaded() else [e.model for e in events if isinstance(e, UsageEvent) and e.cost is None]
        if unpriced:  # priced below: by the config or the memo, else the price data loads off the loop, once
            await prices_ready(unpriced, self._pricing)
        status: TurnStatus = reply.status
        if status == "completed" and waiting_for_input(events) is not None:
            status = "waiting"
        self.exchange.reply, self.exchange.status = reply.text, status
        return Turn(
            message=reply.text,
            data=reply.data,
            events=events,
            status=status,
            usage=usage_of(events, self._pricing),
            number=self.turns,
            session_number=self.number,
            asked=text,
            _host=self.setup.scope,
            _changes=None if changed is None else (changed,),
        )

    async def send_with_followups(
        self,
        message: Message,
        output: type[Any] | None,
        followups: int,
        files: Sequence[Attachment] = (),
        deps: Any = None,
    ) -> Turn:
        """Send, then answer up to `followups` clarification questions so the eval judges the final answer.

        The turn returned is the final answer, with the events and usage of the whole exchange (every sub-turn;
        the detector's own calls are judge spend, not the agent's).
        """
        if isinstance(followups, bool) or not isinstance(followups, int) or followups < 0:
            raise UsageError(f"t.send(followups=...) is how many clarifications to answer, >= 0; got {followups!r}.")
        _, text = split_chat(message, "t.send()")
        self.exchange.asked = text
        self.turns += 1
        start = len(self._log.events)
        exchanges = len(self.changes or ())
        turn = await self.send(message, output, files, deps)
        followup_model = self.setup.followup_model
        if followups and followup_model is None:
            raise UsageError(
                "t.send(followups=N) needs a model to detect clarification questions: set "
                "define_config(judge={'model': 'openai/...'}) or pass --grader."
            )
        from niceeval.agents import answer_followup
        from niceeval.providers import ProviderError

        for _ in range(followups):
            if turn.status != "completed":
                break
            history = [{"role": e.role, "content": e.text} for e in self._log.events if isinstance(e, MessageEvent)]
            try:
                answer = await answer_followup(
                    turn.message, history[:-1], model=str(followup_model), goal=text, log=self._log
                )
            except ProviderError as exc:
                self._log.emit(ErrorEvent(message=f"follow-up detection failed: {exc}", error_type="FollowupError"))
                break
            if answer is None:
                break
            turn = await self.send(answer, output, deps=deps)
        if followups:
            events = tuple(self._log.events[start:])
            changes = None if self.changes is None else tuple(self.changes[exchanges:])
            turn = replace(turn, events=events, usage=usage_of(events, self._pricing), asked=text, _changes=changes)
        return turn

    async def respond(self, value: object) -> Turn:
        if self.exchange.status != "waiting":
            raise UsageError("t.respond() answers an agent that asked for input, but the last turn is not waiting.")
        text = value if isinstance(value, str) else json.dumps(value, default=str)
        self.turns += 1
        return await self.send(text)

    async def respond_all(self, value: object, limit: int = 20) -> Turn:
        """Answer with `value` while the agent keeps asking (at most `limit` times); the last turn."""
        if self.exchange.status != "waiting":
            raise UsageError("t.respond_all() answers an agent that asked for input, but the last turn is not waiting.")
        turn = await self.respond(value)
        for _ in range(limit - 1):
            if turn.status != "waiting":
                break
            turn = await self.respond(value)
        return turn

    async def revive(self) -> None:
        """Close the session and reopen it by the same id: the agent must restore it from its own storage."""
        await self.close()
        await self._open()

    def own_events(self) -> list[Event]:
        """This session's events so far."""
        return self.events_of(self._log.events)

    def events_of(self, events: Sequence[Event]) -> list[Event]:
        """This session's events among the run's `events` (the whole log, as scoped assertions get it)."""
        return events_in(self.spans, events)

    @property
    def opened(self) -> bool:
        """Whether the agent session is open (a turn opened it; `close` ends it)."""
        return self._session is not None

    async def close(self) -> None:
        if self._session is not None:
            session, self._session = self._session, None
            await session.close()


class Session(ScopeAssertions):
    """A conversation with the agent: `t.session` (the current one), or what `t.new_session()` returns.

    Every scoped assertion of `t` works on a session too, over only the events of its turns
    (`session.called_tool("search")`, `session.succeeded()`); reports name it (`session 2: succeeded`).
    """

    __slots__ = ("_conversation",)

    def __init__(self, conversation: Conversation) -> None:
        self._conversation = conversation

    @property
    def id(self) -> str:
        """The session id the agent sees."""
        return self._conversation.id

    @property
    def number(self) -> int:
        """1 for the eval's first session, 2 for the next, ..."""
        return self._conversation.number

    @property
    def reply(self) -> str:
        """The agent's last reply in this session ("" before the first turn)."""
        return self._conversation.reply

    @property
    def events(self) -> list[Event]:
        """The events of this session's turns so far, in order."""
        return self._conversation.own_events()

    @property
    def tool_calls(self) -> list[ToolCall]:
        """This session's tool calls so far, in order, typed: name, input, output, status, duration."""
        return tool_calls_of(self.events)

    def diff(self) -> Coroutine[Any, Any, Diff]:
        """Sandbox evals: what this session's turns changed in the workspace so far (`await session.diff()`); per
        path, the file as its first turn found it and as its last turn left it, the eval's own writes left out."""
        return diff_of(self._conversation.changes, f"session {self.number}: session.diff()")

    def _scope_host(self) -> ScopeHost | None:
        return self._conversation.setup.scope

    def _scope_label(self) -> str:
        return f"session {self._conversation.number}"

    def _scope_select(self) -> EventSelector:
        # Over the conversation's spans, not the conversation: the registered assertion is kept in the run's state,
        # and the conversation refers to that state (through its scope).
        return partial(events_in, self._conversation.spans)

    def _scope_reply(self) -> tuple[str, str | None]:
        return self._conversation.reply, self._conversation.asked

    def __repr__(self) -> str:
        return f"<Session {self._conversation.number} id={self._conversation.id!r}>"
