"""Spans become events by their semantic attributes: one rule per test, GenAI conventions and OpenInference."""

from __future__ import annotations

from niceeval._core.events import ActionCalledEvent, ErrorEvent, SubagentCalledEvent, UsageEvent
from niceeval._core.spans import link
from niceeval.tracing import SpanEvent, events_from_spans, role
from tests.tracing.trace_helpers import span


def mapped(*spans: object) -> list[object]:
    return list(events_from_spans(link(spans)))  # type: ignore[arg-type]


def test_genai_chat_span_is_usage_with_the_cached_split_and_the_response_model() -> None:
    chat = span(
        "a",
        None,
        "whatever the library calls it",
        **{
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": "openai",
            "gen_ai.request.model": "gpt-5",
            "gen_ai.response.model": "gpt-5-mini-2025",
            "gen_ai.usage.input_tokens": 100,
            "gen_ai.usage.output_tokens": 20,
            "gen_ai.usage.cache_read.input_tokens": 30,
        },
    )
    (usage,) = mapped(chat)
    assert isinstance(usage, UsageEvent)
    assert (usage.model, usage.input_tokens, usage.cache_read_tokens, usage.output_tokens) == (
        "openai/gpt-5-mini-2025",
        70,
        30,
        20,
    )
    assert usage.billed_to == "agent"


def test_old_genai_token_names_and_request_model_are_read() -> None:
    chat = span(
        "a",
        None,
        **{
            "gen_ai.operation.name": "text_completion",
            "gen_ai.system": "anthropic",
            "gen_ai.request.model": "claude-x",
            "gen_ai.usage.prompt_tokens": 9,
            "gen_ai.usage.completion_tokens": 4,
        },
    )
    (usage,) = mapped(chat)
    assert isinstance(usage, UsageEvent)
    assert (usage.model, usage.input_tokens, usage.output_tokens) == ("anthropic/claude-x", 9, 4)


def test_openinference_llm_span_is_usage() -> None:
    llm = span(
        "a",
        None,
        "ChatOpenAI",
        **{
            "openinference.span.kind": "LLM",
            "llm.model_name": "gpt-4o-mini",
            "llm.provider": "openai",
            "llm.token_count.prompt": 50,
            "llm.token_count.completion": 5,
            "llm.token_count.prompt_details.cache_read": 10,
        },
    )
    (usage,) = mapped(llm)
    assert isinstance(usage, UsageEvent)
    assert (usage.model, usage.input_tokens, usage.cache_read_tokens, usage.output_tokens) == (
        "openai/gpt-4o-mini",
        40,
        10,
        5,
    )


def test_model_span_inside_a_model_span_counts_once() -> None:
    outer = span("a", None, **{"openinference.span.kind": "LLM", "llm.token_count.prompt": 10})
    inner = span("b", "a", **{"gen_ai.operation.name": "chat", "gen_ai.usage.input_tokens": 10})
    assert len(mapped(outer, inner)) == 1


def test_model_span_without_tokens_is_no_usage() -> None:
    assert mapped(span("a", None, **{"gen_ai.operation.name": "chat", "gen_ai.request.model": "m"})) == []


def test_genai_tool_span_is_an_action_with_input_output_and_duration() -> None:
    tool = span(
        "a",
        None,
        "running tool: lookup",
        start=1_000_000_000,
        end=1_250_000_000,
        **{
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "lookup_order",
            "gen_ai.tool.call.id": "call_1",
            "gen_ai.tool.call.arguments": '{"order_id": "A-7"}',
            "gen_ai.tool.call.result": '{"status": "shipped"}',
        },
    )
    (action,) = mapped(tool)
    assert isinstance(action, ActionCalledEvent)
    assert (action.id, action.name, action.status, action.error) == ("call_1", "lookup_order", "success", None)
    assert action.input == {"order_id": "A-7"} and action.output == {"status": "shipped"}
    assert action.duration == 0.25


def test_pydantic_ai_legacy_tool_attributes_are_read() -> None:
    tool = span(
        "a",
        None,
        **{
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "f",
            "tool_arguments": "{}",
            "tool_response": "plain text",
        },
    )
    (action,) = mapped(tool)
    assert isinstance(action, ActionCalledEvent)
    assert action.input == {} and action.output == "plain text"


def test_openinference_tool_span_is_an_action() -> None:
    tool = span(
        "a",
        None,
        "lookup",
        **{"openinference.span.kind": "TOOL", "tool.name": "lookup", "input.value": '{"q": 1}', "output.value": "7"},
    )
    (action,) = mapped(tool)
    assert isinstance(action, ActionCalledEvent)
    assert (action.name, action.input, action.output, action.id) == ("lookup", {"q": 1}, "7", "a")


def test_failed_tool_is_a_failed_action_not_an_error_and_its_parents_add_nothing() -> None:
    agent = span("a", None, **{"gen_ai.operation.name": "invoke_agent"})
    agent.status = "error"
    tool = span("b", "a", **{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "pay"})
    tool.status = "error"
    tool.events = (
        SpanEvent(name="exception", at_ns=1, attributes={"exception.type": "ValueError", "exception.message": "no"}),
    )
    (action,) = mapped(agent, tool)
    assert isinstance(action, ActionCalledEvent)
    assert action.status == "failed" and action.error == "ValueError: no"


def test_innermost_failed_span_is_one_error_with_its_type() -> None:
    agent = span("a", None, "agent run", **{"openinference.span.kind": "AGENT"})
    chain = span("b", "a", "retrieve", **{"openinference.span.kind": "CHAIN", "error.type": "TimeoutError"})
    for failed in (agent, chain):
        failed.status = "error"
    chain.status_message = "took too long"
    (error,) = mapped(agent, chain)
    assert isinstance(error, ErrorEvent)
    assert error.message == "retrieve: took too long" and error.error_type == "TimeoutError"


def test_same_tool_call_id_twice_is_one_call() -> None:
    a = span(
        "a", None, **{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "f", "gen_ai.tool.call.id": "c"}
    )
    b = span("b", "a", **{"openinference.span.kind": "TOOL", "tool.name": "f", "tool_call.id": "c"})
    assert len(mapped(a, b)) == 1


def test_first_top_agent_is_the_agent_under_test_others_are_subagents() -> None:
    main = span(
        "a", None, "triage", start=1, **{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "triage"}
    )
    nested = span("b", "a", start=2, **{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "billing"})
    handoff = span("c", None, "Refunds", start=3, **{"openinference.span.kind": "AGENT", "output.value": "done"})
    events = mapped(main, nested, handoff)
    assert [type(e) for e in events] == [SubagentCalledEvent, SubagentCalledEvent]
    assert [(e.name, e.output) for e in events] == [("billing", None), ("Refunds", "done")]  # type: ignore[attr-defined]


def test_events_follow_span_start_order() -> None:
    late_tool = span("b", None, start=5, **{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "second"})
    early_tool = span("a", None, start=2, **{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "first"})
    assert [e.name for e in mapped(late_tool, early_tool)] == ["first", "second"]  # type: ignore[attr-defined]


def test_display_names_never_decide_the_role() -> None:
    assert role(span("a", None, "agent run")) == "other"
    assert role(span("a", None, "time_range_agent run", **{"gen_ai.operation.name": "invoke_agent"})) == "agent"
    assert role(span("a", None, "x", **{"openinference.span.kind": "retriever"})) == "other"
    assert mapped(span("a", None, "execute_tool lookup"), span("b", None, "chat gpt-5")) == []
