"""`t.send(text, files=[...])`: content parts for the OpenAI and Anthropic adapters, `session.files` for function
agents, and a clear error at the line for a missing file, a type no adapter sends, or an agent that takes none."""

from __future__ import annotations

import base64
import re
from pathlib import Path
from typing import Any

import anyio
import pytest
from agent_helpers import model_agent

from niceeval import EvalContext, RunResult, define_eval
from niceeval._eval.spec import EvalSpec
from niceeval._run.discovery import EvalEntry
from niceeval._run.execute import ExecOptions, execute
from niceeval.agents import FunctionSession, anthropic_agent, function_agent, http_agent, openai_agent
from niceeval.testing import LLMServer

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16
PDF = b"%PDF-1.4\n%fake\n"


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    made = {"chart.png": PNG, "invoice.pdf": PDF, "notes.txt": b"total: 12 EUR\n", "blob.bin": b"\x00\xff\xfe"}
    for name, data in made.items():
        (tmp_path / name).write_bytes(data)
    return {name: tmp_path / name for name in made}


def run(spec: EvalSpec, agent: Any) -> RunResult:
    entry = EvalEntry(id=f"tests/agents/test_attachments.py::{spec.name}", spec=spec)
    return anyio.run(execute, entry, 0, ExecOptions(timeout=20, agent=agent))


def test_a_function_agent_reads_the_files_from_its_session(files: dict[str, Path]) -> None:
    seen: list[tuple[str, str, int]] = []

    @function_agent
    def reader(message: str, session: FunctionSession) -> str:
        seen.extend((f.name, f.media_type, len(f.data)) for f in session.files)
        return "read " + ", ".join(f.name for f in session.files)

    @define_eval
    async def ev(t: EvalContext) -> None:
        await t.send("what is in these?", files=[files["chart.png"], str(files["invoice.pdf"]), b"plain bytes"])
        await t.send("and now?")

    result = run(ev, reader)
    assert result.error is None, result.error
    assert seen == [
        ("chart.png", "image/png", len(PNG)),
        ("invoice.pdf", "application/pdf", len(PDF)),
        ("file3", "text/plain", 11),
    ]
    first_user = next(e for e in result.events if e.type == "message" and e.role == "user")
    assert first_user.data == {  # the record names the files, without their bytes
        "files": [
            {"name": "chart.png", "media_type": "image/png", "size": len(PNG)},
            {"name": "invoice.pdf", "media_type": "application/pdf", "size": len(PDF)},
            {"name": "file3", "media_type": "text/plain", "size": 11},
        ]
    }


def test_openai_gets_image_pdf_and_text_as_content_parts(llm_server: LLMServer, files: dict[str, Path]) -> None:
    llm_server.push("A chart, an invoice and notes.")
    agent = model_agent(openai_agent, "openai/test-model", llm_server.base_url)

    @define_eval
    async def ev(t: EvalContext) -> None:
        await t.send("describe", files=[files["chart.png"], files["invoice.pdf"], files["notes.txt"]])

    assert run(ev, agent).error is None
    (request,) = llm_server.requests
    content = request.body["messages"][-1]["content"]
    assert [part["type"] for part in content] == ["text", "image_url", "file", "text"]
    assert content[1]["image_url"]["url"] == "data:image/png;base64," + base64.b64encode(PNG).decode()
    assert content[2]["file"]["filename"] == "invoice.pdf"
    assert content[2]["file"]["file_data"].startswith("data:application/pdf;base64,")
    assert content[3]["text"] == "<file name='notes.txt'>\ntotal: 12 EUR\n\n</file>"


def test_anthropic_gets_image_and_document_blocks_before_the_text(
    llm_server: LLMServer, files: dict[str, Path]
) -> None:
    llm_server.push("Seen.")
    agent = model_agent(anthropic_agent, "anthropic/test-model", llm_server.anthropic_base_url)

    @define_eval
    async def ev(t: EvalContext) -> None:
        await t.send("describe", files=[files["chart.png"], files["invoice.pdf"], files["notes.txt"]])

    assert run(ev, agent).error is None
    (request,) = llm_server.requests
    blocks = request.body["messages"][-1]["content"]
    assert [b["type"] for b in blocks] == ["image", "document", "document", "text"]
    assert blocks[0]["source"] == {"type": "base64", "media_type": "image/png", "data": base64.b64encode(PNG).decode()}
    assert blocks[1]["source"]["media_type"] == "application/pdf"
    assert blocks[2]["source"] == {"type": "text", "media_type": "text/plain", "data": "total: 12 EUR\n"}


@pytest.mark.parametrize(
    ("files_given", "message"),
    [
        (["missing.png"], "files=[...] item 1: no file at 'missing.png'"),
        ("BLOB", "item 1 (blob.bin) is neither an image (PNG, JPEG, GIF, WebP), a PDF nor UTF-8 text"),
        ([42], "files=[...] takes paths, bytes or Attachment(...); item 1 is int"),
    ],
)
def test_bad_files_are_errors_at_the_send_line(files: dict[str, Path], files_given: Any, message: str) -> None:
    given = [files["blob.bin"]] if files_given == "BLOB" else files_given

    @define_eval
    async def ev(t: EvalContext) -> None:
        await t.send("look", files=given)

    result = run(ev, lambda m: "x")
    assert result.error is not None and result.error.kind == "usage"
    assert message in result.error.message
    assert re.match(r"t\.send\(\) at \S*tests/agents/test_attachments\.py:\d+: ", result.error.message)


def test_an_agent_that_cannot_take_files_says_which_can(files: dict[str, Path]) -> None:
    @define_eval
    async def ev(t: EvalContext) -> None:
        await t.send("look", files=[files["notes.txt"]])

    result = run(ev, http_agent("http://127.0.0.1:9/chat"))
    assert result.error is not None
    assert (
        "this agent (HTTPAgent) cannot take files; openai_agent, anthropic_agent and function agents"
        in result.error.message
    )


CHAT = [
    {"role": "user", "content": "My order is 1234."},
    {"role": "assistant", "content": "Noted."},
    {"role": "user", "content": "Where is it?"},
]


def test_a_chat_list_reaches_a_function_agent_whole() -> None:
    got: list[Any] = []

    def chat_agent(messages: Any) -> str:
        got.append(messages)
        return "on its way"

    @define_eval
    async def ev(t: EvalContext) -> None:
        turn = await t.send(CHAT)
        assert turn.asked == "Where is it?"

    result = run(ev, chat_agent)
    assert result.error is None, result.error
    assert got == [CHAT]
    user = next(e for e in result.events if e.type == "message" and e.role == "user")
    assert (user.text, user.data) == ("Where is it?", {"history": CHAT[:2]})


def test_a_chat_list_continues_an_openai_conversation(llm_server: LLMServer) -> None:
    llm_server.push("It shipped.")
    agent = model_agent(openai_agent, "openai/test-model", llm_server.base_url, system="Support.")

    @define_eval
    async def ev(t: EvalContext) -> None:
        await t.send([{"role": "system", "content": "Be brief."}, *CHAT])

    assert run(ev, agent).error is None
    (request,) = llm_server.requests
    assert request.body["messages"] == [
        {"role": "system", "content": "Support."},
        {"role": "system", "content": "Be brief."},
        *CHAT,
    ]


def test_a_system_message_for_anthropic_says_to_use_system(llm_server: LLMServer) -> None:
    agent = model_agent(anthropic_agent, "anthropic/test-model", llm_server.anthropic_base_url)

    @define_eval
    async def ev(t: EvalContext) -> None:
        await t.send([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}])

    result = run(ev, agent)
    assert result.error is not None and "give the agent its system prompt (system=...)" in result.error.message


@pytest.mark.parametrize(
    ("chat", "message"),
    [
        ([{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}], "a chat must end with the user's"),
        ([{"role": "robot", "content": "a"}], "message 1 must be {'role': 'system' | 'user' | 'assistant'"),
        ([], "takes the message as a string or a list of chat messages"),
    ],
)
def test_a_malformed_chat_is_an_error_at_the_send_line(chat: Any, message: str) -> None:
    @define_eval
    async def ev(t: EvalContext) -> None:
        await t.send(chat)

    result = run(ev, lambda m: "x")
    assert result.error is not None and result.error.kind == "usage"
    assert message in result.error.message
    assert re.match(r"t\.send\(\) at \S*tests/agents/test_attachments\.py:\d+", result.error.message)
