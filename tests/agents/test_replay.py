"""The replaying agent of `niceeval rescore`: recorded turns served in order, a miss never sent live."""

from __future__ import annotations

import anyio
import pytest
from pydantic import BaseModel

from niceeval._core.events import ActionCalledEvent, ErrorEvent, EventLog, MessageEvent
from niceeval.agents._replay import RecordedTurn, ReplayAgent, ReplayMiss


class Intent(BaseModel):
    intent: str


def turn(sent: str, reply: str | None, *extra: object, data: object = None) -> RecordedTurn:
    events = [MessageEvent(role="user", text=sent), *extra]
    if reply is not None:
        events.append(MessageEvent(role="assistant", text=reply, data=data))
    return RecordedTurn(sent=sent, reply=reply, data=data, events=tuple(events))  # type: ignore[arg-type]


async def _send(agent: ReplayAgent, log: EventLog, *messages: str, output: type | None = None) -> list[str]:
    session = await agent.open("s1", log)
    return [(await session.send(m, output=output)).text for m in messages]


def test_turns_are_served_in_order_with_their_events() -> None:
    agent = ReplayAgent(turns=[turn("hi", "hello", ActionCalledEvent(name="lookup")), turn("bye", "see you")])
    log = EventLog()
    assert anyio.run(_send, agent, log, "hi", "bye") == ["hello", "see you"]
    assert [(e.type, e.seq) for e in log.events] == [
        ("message", 0), ("action.called", 1), ("message", 2), ("message", 3), ("message", 4),
    ]  # fmt: skip


def test_a_different_message_is_a_replay_miss_naming_both() -> None:
    agent = ReplayAgent(turns=[turn("hi", "hello")])
    with pytest.raises(ReplayMiss, match=r"sent 'hey' as turn 1, but the record sent 'hi'"):
        anyio.run(_send, agent, EventLog(), "hey")


def test_a_turn_beyond_the_record_is_a_replay_miss() -> None:
    agent = ReplayAgent(turns=[turn("hi", "hello")])
    with pytest.raises(ReplayMiss, match=r"sent 'more\?' as turn 2, but the record has only 1 turns"):
        anyio.run(_send, agent, EventLog(), "hi", "more?")


def test_a_revived_session_continues_the_record() -> None:
    agent = ReplayAgent(turns=[turn("a", "1"), turn("b", "2")])
    log = EventLog()
    assert anyio.run(_send, agent, log, "a") == ["1"]
    assert anyio.run(_send, agent, log, "b") == ["2"]


def test_structured_data_comes_back_as_the_type_asked_for() -> None:
    agent = ReplayAgent(turns=[turn("classify", '{"intent": "refund"}', data={"intent": "refund"})])

    async def main() -> object:
        session = await agent.open("s1", EventLog())
        return (await session.send("classify", output=Intent)).data

    assert anyio.run(main) == Intent(intent="refund")


def test_a_turn_where_the_agent_failed_fails_again() -> None:
    failed = RecordedTurn(
        sent="hi",
        reply=None,
        events=(MessageEvent(role="user", text="hi"), ErrorEvent(message="RuntimeError: upstream down")),
    )
    log = EventLog()
    with pytest.raises(RuntimeError, match="the recorded agent failed on this turn: RuntimeError: upstream down"):
        anyio.run(_send, ReplayAgent(turns=[failed]), log, "hi")
    assert [e.type for e in log.events] == ["message"]  # the error event comes from the conversation, once
