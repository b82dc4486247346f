"""A conversation with the agent under test: sessions opened lazily, revived by id, answered when parked."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from niceeval._core.assertion import Matcher
from niceeval._core.errors import UsageError, caller_location
from niceeval._core.events import ErrorEvent, Event, EventLog, MessageEvent
from niceeval._core.settings import Price
from niceeval._core.values import short
from niceeval._eval.checks import Check
from niceeval._eval.efficiency import Usage, usage_of
from niceeval._eval.scoped import waiting_for_input
from niceeval.agents import Agent, AgentSession, FunctionAgent, TurnStatus
from niceeval.expect._matchers import equals, matches

RecordCheck = Callable[[Any, Matcher, str | None], Check]


@dataclass(frozen=True, kw_only=True, slots=True)
class Turn:
    """One exchange with the agent: what it answered, its structured data, and what happened meanwhile."""

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
    _record: RecordCheck | None = field(default=None, repr=False, compare=False)

    def output_equals(self, expected: object) -> Check:
        """Check that `turn.data` deeply equals `expected` (a gate, like `t.check(turn.data, equals(...))`)."""
        return self._check(equals(expected).label("output_equals"))

    def output_matches(self, schema: Any) -> Check:
        """Check that `turn.data` validates against `schema` (pydantic model or type, or a JSON Schema dict)."""
        return self._check(matches(schema).label("output_matches"))

    def _check(self, matcher: Matcher) -> Check:
        if self._record is None:
            raise UsageError("turn.output_equals/output_matches work on turns returned by t.send() in an eval.")
        return self._record(self.data, matcher, caller_location(2))


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


class Conversation:
    """One conversation (session) with the agent; `t.send` uses the eval's current one."""

    def __init__(
        self,
        agent_spec: object,
        log: EventLog,
        eval_id: str,
        *,
        followup_model: str | None = None,
        pricing: Mapping[str, Price] | None = None,
        record: RecordCheck | None = None,
    ) -> None:
        self._agent_spec = agent_spec
        self._followup_model = followup_model
        self._pricing = pricing or {}
        self._record = record
        self._log = log
        self._eval_id = eval_id
        self._id: str | None = None
        self._session: AgentSession | None = None
        self._agent: Agent | None = None
        self.reply = ""
        self.asked: str | None = None
        """What the eval last sent with `t.send` (follow-up answers and `t.respond` values are not); None before."""
        self.last_status: TurnStatus = "completed"

    @property
    def id(self) -> str:
        """The session id: unique across processes (checkpoint stores outlive runs), made when first needed."""
        if self._id is None:
            self._id = f"{self._eval_id}#{uuid.uuid4().hex[:12]}"
        return self._id

    async def _open(self) -> AgentSession:
        if self._session is None:
            self._agent = self._agent or resolve_agent(self._agent_spec)
            self._session = await self._agent.open(self.id, self._log)
        return self._session

    async def send(self, text: str, output: type[Any] | None = None) -> Turn:
        if not isinstance(text, str):
            raise UsageError(f"t.send() takes the message as a string, got {type(text).__name__}.")
        session = await self._open()
        start = len(self._log.events)
        try:
            reply = await session.send(text, output=output)
        except Exception as exc:  # the run fails with this exception; the stream shows where it happened
            self._log.emit(ErrorEvent(message=f"{type(exc).__name__}: {exc}", error_type=type(exc).__name__))
            raise
        events = tuple(self._log.events[start:])
        status: TurnStatus = reply.status
        if status == "completed" and waiting_for_input(events) is not None:
            status = "waiting"
        self.reply, self.last_status = reply.text, status
        return Turn(
            message=reply.text,
            data=reply.data,
            events=events,
            status=status,
            usage=usage_of(events, self._pricing),
            _record=self._record,
        )

    async def send_with_followups(self, text: str, output: type[Any] | None, followups: int) -> Turn:
        """Send, then answer up to `followups` clarification questions so the eval judges the final answer.

        The turn returned is the final answer, with the events and usage of the whole exchange (every sub-turn;
        the detector's own calls are judge spend, not the agent's).
        """
        if isinstance(followups, bool) or not isinstance(followups, int) or followups < 0:
            raise UsageError(f"t.send(followups=...) is how many clarifications to answer, >= 0; got {followups!r}.")
        if isinstance(text, str):
            self.asked = text
        start = len(self._log.events)
        turn = await self.send(text, output)
        if followups and self._followup_model is None:
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
                    turn.message, history[:-1], model=str(self._followup_model), goal=text, log=self._log
                )
            except ProviderError as exc:
                self._log.emit(ErrorEvent(message=f"follow-up detection failed: {exc}", error_type="FollowupError"))
                break
            if answer is None:
                break
            turn = await self.send(answer, output)
        if followups:
            events = tuple(self._log.events[start:])
            turn = replace(turn, events=events, usage=usage_of(events, self._pricing))
        return turn

    async def respond(self, value: object) -> Turn:
        if self.last_status != "waiting":
            raise UsageError("t.respond() answers an agent that asked for input, but the last turn is not waiting.")
        text = value if isinstance(value, str) else json.dumps(value, default=str)
        return await self.send(text)

    async def revive(self) -> None:
        """Close the session and reopen it by the same id: the agent must restore it from its own storage."""
        await self.close()
        await self._open()

    async def close(self) -> None:
        if self._session is not None:
            session, self._session = self._session, None
            await session.close()
