"""Checkpoint stores, and revival: a closed session reopened by id continues from storage."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest
from agent_helpers import opened

from niceeval.agents import (
    CheckpointStore,
    MemoryCheckpoints,
    ModelAgent,
    ModelAgentOptions,
    SQLiteCheckpoints,
    anthropic_agent,
    openai_agent,
)
from niceeval.testing import LLMServer

pytestmark = pytest.mark.anyio


async def test_sqlite_checkpoints_round_trip_and_replace(tmp_path: Path) -> None:
    store = SQLiteCheckpoints(tmp_path / "deep" / "c.sqlite")
    assert await store.load("s") is None
    await store.save("s", [{"role": "user", "content": "hi"}])
    await store.save("s", [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "héllo"}])
    assert await SQLiteCheckpoints(tmp_path / "deep" / "c.sqlite").load("s") == [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "héllo"},
    ]


async def test_sqlite_checkpoints_default_to_a_file_under_dot_niceeval(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    await SQLiteCheckpoints().save("s", [])
    assert (tmp_path / ".niceeval" / "checkpoints.sqlite").is_file()


async def test_concurrent_sessions_save_safely(tmp_path: Path) -> None:
    store = SQLiteCheckpoints(tmp_path / "c.sqlite")

    async def converse(n: int) -> None:
        for turn in range(5):
            await store.save(f"s{n}", [{"turn": turn, "session": n}])

    async with anyio.create_task_group() as tg:
        for n in range(20):
            tg.start_soon(converse, n)
    assert [await store.load(f"s{n}") for n in range(20)] == [[{"turn": 4, "session": n}] for n in range(20)]


async def test_memory_checkpoints_hand_out_copies_and_stay_bounded() -> None:
    store = MemoryCheckpoints(max_sessions=2)
    messages = [{"role": "user", "content": "a"}]
    await store.save("s1", messages)
    messages.append({"role": "user", "content": "changed after saving"})
    loaded = await store.load("s1")
    assert loaded == [{"role": "user", "content": "a"}]
    await store.save("s2", [])
    await store.save("s3", [])
    assert await store.load("s1") is None and await store.load("s3") == []
    assert isinstance(store, CheckpointStore) and isinstance(SQLiteCheckpoints(), CheckpointStore)


async def test_revival_from_sqlite_with_a_new_agent_object(llm_server: LLMServer, tmp_path: Path) -> None:
    path = tmp_path / "checkpoints.sqlite"
    llm_server.push("You have 3 listings: A, B and C.", "A is 80% booked.")

    def make() -> ModelAgent:
        return openai_agent(
            "openai/test-model",
            base_url=llm_server.base_url,
            api_key="k",
            options=ModelAgentOptions(checkpoints=SQLiteCheckpoints(path)),
        )

    async with opened(make(), "eval#revive") as (session, _):
        await session.send("What are my listings?")
    async with opened(make(), "eval#revive") as (session, _):
        reply = await session.send("What's the occupancy of the first one?")

    assert reply.text == "A is 80% booked."
    second = llm_server.requests[1]
    assert [(m.role, m.content) for m in second.messages] == [
        ("user", "What are my listings?"),
        ("assistant", "You have 3 listings: A, B and C."),
        ("user", "What's the occupancy of the first one?"),
    ]
    assert os.path.getsize(path) > 0


async def test_revival_in_memory_by_default_and_sessions_stay_apart(llm_server: LLMServer) -> None:
    llm_server.push("one", "two", "three")
    agent = anthropic_agent("anthropic/claude-haiku-4-5", base_url=llm_server.anthropic_base_url, api_key="k")
    async with opened(agent, "a") as (session, _):
        await session.send("first")
    async with opened(agent, "b") as (session, _):
        await session.send("other conversation")
    async with opened(agent, "a") as (session, _):
        await session.send("second")

    assert [m.content for m in llm_server.requests[1].messages] == ["other conversation"]
    assert [m.content for m in llm_server.requests[2].messages] == ["first", "one", "second"]


async def test_a_lone_surrogate_is_saved_as_the_replacement_character(tmp_path: Path) -> None:
    store = SQLiteCheckpoints(tmp_path / "c.sqlite")
    await store.save("s", [{"role": "assistant", "content": "bad \ud83d reply"}])
    assert await store.load("s") == [{"role": "assistant", "content": "bad \ufffd reply"}]


async def test_an_environment_api_key_in_a_conversation_is_not_saved_in_clear(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-checkpointed-key-0123")
    store = SQLiteCheckpoints(tmp_path / "c.sqlite")
    await store.save("s", [{"role": "user", "content": "my key is sk-test-checkpointed-key-0123"}])
    assert b"checkpointed-key" not in (tmp_path / "c.sqlite").read_bytes()
    assert await store.load("s") == [{"role": "user", "content": "my key is [redacted:OPENAI_API_KEY]"}]


async def test_a_garbled_checkpoints_file_is_named_with_what_to_do(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    path.write_bytes(b"this is no database at all" * 200)
    with pytest.raises(Exception, match=r"checkpoints file .*c\.sqlite is damaged .*move it away"):
        await SQLiteCheckpoints(path).load("s")
