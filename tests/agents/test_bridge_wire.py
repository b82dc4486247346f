"""What the bridge reads in OpenAI traffic, on bodies and streams the local server does not produce."""

from __future__ import annotations

import json

from niceeval.agents._bridge_wire import StreamReader, answer_of, split_events, tool_results


def test_events_are_cut_whatever_the_line_endings_and_chunk_boundaries() -> None:
    stream = b'data: {"a": 1}\r\n\r\ndata: {"b": 2}\n\ndata: [DONE]\r\n\r\n'
    buffer, events = bytearray(), []
    for i in range(0, len(stream), 3):  # three bytes at a time: separators split across chunks
        buffer += stream[i : i + 3]
        events += split_events(buffer)
    assert events == [b'data: {"a": 1}\r\n\r\n', b'data: {"b": 2}\n\n', b"data: [DONE]\r\n\r\n"]
    assert buffer == bytearray()


def test_streamed_tool_calls_are_assembled_per_choice_and_index() -> None:
    def chunk(**delta: object) -> bytes:
        return f"data: {json.dumps({'model': 'gpt-x', 'choices': [{'index': 0, 'delta': delta}]})}\n\n".encode()

    reader = StreamReader("chat")
    for event in [
        chunk(tool_calls=[{"index": 0, "id": "a", "function": {"name": "lookup", "arguments": '{"id"'}}]),
        chunk(tool_calls=[{"index": 1, "id": "b", "function": {"name": "other", "arguments": "{}"}}]),
        chunk(tool_calls=[{"index": 0, "function": {"arguments": ': "7"}'}}]),
        b"data: [DONE]\n\n",
    ]:
        assert reader.feed(event)
    answer = reader.result()
    assert reader.finished and answer.model == "gpt-x"
    assert [(c.id, c.name, c.arguments) for c in answer.calls] == [("a", "lookup", '{"id": "7"}'), ("b", "other", "{}")]


def test_odd_shapes_are_skipped_never_an_error() -> None:
    assert answer_of("chat", {"choices": "no", "usage": {"prompt_tokens": "many"}}).usage is not None
    assert answer_of("responses", ["not", "an", "object"]).calls == []
    assert tool_results("chat", {"messages": [{"role": "tool"}, 3, {"role": "tool", "tool_call_id": 5}]}) == []
    reader = StreamReader("responses")
    assert reader.feed(b"data: {not json\n\n") and reader.feed(b": a comment\n\n") and not reader.finished
