"""Python functions as tools: described from signature and docstring, run with validated arguments."""

from __future__ import annotations

import threading
from typing import Literal

import pytest

from niceeval._core.errors import UsageError
from niceeval._core.events import ActionCalledEvent, EventLog
from niceeval.agents._tools import ToolRequest, describe, describe_all, parse_docstring, run_tool


def get_weather(city: str, unit: Literal["C", "F"] = "C", days: int = 1) -> dict[str, object]:
    """Weather forecast for a city.

    Looks the city up in the forecast service.

    Args:
        city: City name, e.g. "Oslo".
        unit (str): Temperature unit,
            Celsius or Fahrenheit.
        days: How many days ahead.

    Returns:
        The forecast.
    """
    return {"city": city, "unit": unit, "days": days, "thread": threading.current_thread().name}


async def lookup_order(order_id: str) -> str:
    """Find an order."""
    return f"order {order_id}: shipped"


def variadic(*names: str) -> str:
    """Takes anything."""
    return ",".join(names)


def explode(reason: str) -> str:
    """Always fails."""
    raise RuntimeError(f"boom: {reason}")


def only(log: EventLog) -> ActionCalledEvent:
    (event,) = log.events
    assert isinstance(event, ActionCalledEvent)
    return event


def test_description_and_parameters_come_from_the_signature_and_docstring() -> None:
    tool = describe(get_weather)
    assert tool.name == "get_weather"
    assert tool.description == "Weather forecast for a city.\n\nLooks the city up in the forecast service."
    properties = tool.parameters["properties"]
    assert properties["city"] == {"description": 'City name, e.g. "Oslo".', "title": "City", "type": "string"}
    assert properties["unit"]["enum"] == ["C", "F"]
    assert properties["unit"]["description"] == "Temperature unit, Celsius or Fahrenheit."
    assert properties["days"]["default"] == 1
    assert tool.parameters["required"] == ["city"]
    assert tool.parameters["additionalProperties"] is False


def test_docstring_sections_other_than_args_are_left_out() -> None:
    summary, params = parse_docstring(get_weather.__doc__)
    assert "forecast." not in params.get("days", "")
    assert "Returns" not in summary
    assert set(params) == {"city", "unit", "days"}


def test_a_function_without_a_docstring_is_described_by_its_name() -> None:
    def ping(host: str) -> str:
        return host

    tool = describe(ping)
    assert tool.description == "ping"
    assert "description" not in tool.parameters["properties"]["host"]


@pytest.mark.parametrize(
    ("fn", "hint"),
    [
        (variadic, "parameter 'names' must be a named parameter"),
        (lambda city: city, "tool name '<lambda>' is not allowed"),
        ("not a function", "tools must be functions"),
    ],
)
def test_functions_that_cannot_be_tools_are_usage_errors(fn: object, hint: str) -> None:
    with pytest.raises(UsageError, match=hint):
        describe(fn)  # type: ignore[arg-type]


def test_tool_names_must_be_unique() -> None:
    with pytest.raises(UsageError, match="two tools are named 'explode'"):
        describe_all([explode, explode])


@pytest.mark.anyio
async def test_a_sync_tool_runs_in_a_worker_thread_and_is_recorded() -> None:
    log = EventLog()
    tools = describe_all([get_weather])
    result = await run_tool(tools, ToolRequest(id="c1", name="get_weather", arguments={"city": "Oslo"}), log)
    event = only(log)
    assert (event.id, event.name, event.status, event.input) == ("c1", "get_weather", "success", {"city": "Oslo"})
    assert event.output["city"] == "Oslo" and event.output["thread"] == "niceeval-sync-call"
    assert result.is_error is False and '"unit": "C"' in result.content


@pytest.mark.anyio
async def test_an_async_tool_is_awaited() -> None:
    log = EventLog()
    result = await run_tool(
        describe_all([lookup_order]), ToolRequest(id="c", name="lookup_order", arguments={"order_id": "7"}), log
    )
    assert result.content == "order 7: shipped"
    assert only(log).output == "order 7: shipped"


@pytest.mark.anyio
async def test_a_raising_tool_is_a_failed_action_and_an_error_result() -> None:
    log = EventLog()
    result = await run_tool(
        describe_all([explode]), ToolRequest(id="c", name="explode", arguments={"reason": "x"}), log
    )
    assert result.is_error and result.content == "Error: RuntimeError: boom: x"
    assert (only(log).status, only(log).error) == ("failed", "RuntimeError: boom: x")


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("request_", "error"),
    [
        (ToolRequest(id="c", name="get_weather", arguments={"city": 3}), "invalid arguments for get_weather: city"),
        (ToolRequest(id="c", name="get_weather", arguments={"city": "x", "zip": 1}), "zip: Extra inputs"),
        (ToolRequest(id="c", name="get_weather", arguments="{not json"), "not a JSON object"),
        (ToolRequest(id="c", name="launch", arguments={}), "unknown tool 'launch' (the tools are: get_weather)"),
    ],
)
async def test_bad_calls_are_failed_actions_and_the_model_is_told_why(request_: ToolRequest, error: str) -> None:
    log = EventLog()
    result = await run_tool(describe_all([get_weather]), request_, log)
    assert result.is_error and error in result.content
    assert only(log).status == "failed" and error in (only(log).error or "")


@pytest.mark.anyio
async def test_the_tool_validator_can_reject_a_call() -> None:
    seen: list[tuple[str, dict[str, object]]] = []

    def no_fahrenheit(name: str, arguments: dict[str, object]) -> str | None:
        seen.append((name, arguments))
        return "Fahrenheit is not allowed" if arguments.get("unit") == "F" else None

    log = EventLog()
    tools = describe_all([get_weather])
    ok = await run_tool(tools, ToolRequest(id="a", name="get_weather", arguments={"city": "Oslo"}), log, no_fahrenheit)
    rejected = await run_tool(
        tools, ToolRequest(id="b", name="get_weather", arguments={"city": "Oslo", "unit": "F"}), log, no_fahrenheit
    )
    assert not ok.is_error
    assert rejected.is_error and "rejected by the tool validator: Fahrenheit is not allowed" in rejected.content
    assert [e.status for e in log.events if isinstance(e, ActionCalledEvent)] == ["success", "failed"]
    assert seen == [("get_weather", {"city": "Oslo"}), ("get_weather", {"city": "Oslo", "unit": "F"})]


@pytest.mark.anyio
async def test_an_async_tool_validator_is_awaited() -> None:
    async def never(name: str, arguments: dict[str, object]) -> str | None:
        return "read-only mode"

    log = EventLog()
    result = await run_tool(
        describe_all([lookup_order]), ToolRequest(id="c", name="lookup_order", arguments={"order_id": "1"}), log, never
    )
    assert result.is_error and "read-only mode" in result.content
