"""A live agent's tools answered from a recorded production trace (`define_eval(trace=..., replay="live")`).

The trace's tool calls (its `execute_tool` / `TOOL` spans read as events) are the record: each has a tool name,
the arguments the agent gave and the output the tool returned (or the error it raised). When the agent under test
calls a tool, the call is matched against the record, by one rule (docs/online.md, "From a bad trace to a
regression"):

1. exact: the first recorded call not used yet with the same tool name and equal arguments (compared as JSON);
2. in order: else the first recorded call not used yet with the same tool name, whatever its arguments.

A matched call gets the recorded output (a recorded failure raises `RecordedToolFailure` with the recorded error)
and the tool itself does not run; a call nothing matches raises `UnrecordedToolCall`, naming the tool and its
arguments, and the run errors. Each recorded call answers once.

An adapter that can answer its agent's tool calls through the framework's own API implements `ReplaysTools`:
`replaying(tools)` returns a copy of the adapter whose runs answer every tool call from `tools`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from niceeval._core.errors import NiceevalError, UsageError
from niceeval._core.events import ActionCalledEvent
from niceeval.tracing import Trace, events_from_spans


class UnrecordedToolCall(NiceevalError):
    """The agent called a tool with nothing in the recorded trace left to answer it."""


class RecordedToolFailure(NiceevalError):
    """A tool call the trace recorded as failed, replayed: it raises the recorded error."""


@dataclass(frozen=True, kw_only=True, slots=True)
class RecordedCall:
    """One tool call of the trace: what the agent asked and what the tool answered."""

    name: str
    arguments: Any
    output: Any
    error: str | None = None
    """The recorded error of a call that failed; None for one that succeeded."""


class RecordedTools:
    """The trace's tool calls, answering a live run's calls by the matching rule; one per run (it keeps which
    recorded calls answered already)."""

    def __init__(self, calls: Sequence[RecordedCall]) -> None:
        self.calls = tuple(calls)
        self._used: set[int] = set()

    @classmethod
    def of(cls, trace: Trace) -> RecordedTools:
        """The tool calls `trace` recorded, in the order they started."""
        return cls(
            [
                RecordedCall(name=event.name, arguments=event.input, output=event.output, error=event.error)
                for event in events_from_spans(trace.spans)
                if isinstance(event, ActionCalledEvent)
            ]
        )

    def answer(self, name: str, arguments: Any) -> Any:
        """The recorded output of the call `name(arguments)`.

        Raises:
            UnrecordedToolCall: No recorded call left matches it.
            RecordedToolFailure: The matching recorded call failed: its recorded error.
        """
        index = self._match(name, arguments)
        if index is None:
            raise UnrecordedToolCall(self._unrecorded(name, arguments))
        self._used.add(index)
        call = self.calls[index]
        if call.error is not None:
            raise RecordedToolFailure(f"{name} failed in the recorded trace: {call.error}")
        return call.output

    def _match(self, name: str, arguments: Any) -> int | None:
        left = [i for i, call in enumerate(self.calls) if i not in self._used and call.name == name]
        wanted = _canonical(arguments)
        exact = next((i for i in left if _canonical(self.calls[i].arguments) == wanted), None)
        return exact if exact is not None else next(iter(left), None)

    def _unrecorded(self, name: str, arguments: Any) -> str:
        shown = json.dumps(arguments, ensure_ascii=False, default=str)
        recorded = [f"{c.name}({json.dumps(c.arguments, ensure_ascii=False, default=str)})" for c in self.calls]
        same = sum(1 for c in self.calls if c.name == name)
        if same:
            why = f"the trace recorded {name} {same} time(s) and every one answered an earlier call"
        else:
            why = f"the trace never called {name}; it recorded: {', '.join(recorded) or 'no tool calls'}"
        return (
            f"the agent called {name}({shown}), which the recorded trace cannot answer: {why}. The replay answers "
            "tools only from the trace; to score the trace as it was recorded, write the case with "
            "`niceeval cases from-trace TRACE_ID --replay recorded`"
        )


@runtime_checkable
class ReplaysTools(Protocol):
    """An agent adapter whose runs can have their tool calls answered from a recorded trace."""

    def replaying(self, tools: RecordedTools) -> Any:
        """A copy of this adapter whose runs answer every tool call from `tools`, never running a tool."""
        ...


def replaying_agent(agent: Any, trace: Trace) -> Any:
    """`agent` (an adapter) with its tools answered from `trace`'s recorded calls.

    Raises:
        UsageError: No agent, or one whose tools niceeval cannot answer (it names the alternative).
    """
    check_replays_tools(agent)
    return agent.replaying(RecordedTools.of(trace))


def check_replays_tools(agent: Any) -> None:
    """Raise a `UsageError` unless `agent` can replay its tools from a trace (the adapters of pydantic-ai and the
    OpenAI Agents SDK can)."""
    if agent is None:
        raise UsageError(
            "replaying a trace with the live agent needs an agent: set the config's agent= (or the eval's), or "
            "score the recorded trace instead (`niceeval cases from-trace TRACE_ID --replay recorded`)"
        )
    if not isinstance(agent, ReplaysTools):
        named = type(agent).__name__
        if named == "function":
            named = f"{getattr(agent, '__qualname__', 'function')} (a plain function)"
        raise UsageError(
            f"the agent {named} cannot have its tools answered from a trace: niceeval intercepts "
            "tool calls only through pydantic_ai_agent(...) and openai_agents_agent(...); score the recorded "
            "trace instead (`niceeval cases from-trace TRACE_ID --replay recorded`)"
        )


def _canonical(value: Any) -> str:
    """`value` as JSON with sorted keys (a JSON text is read first), so equal arguments compare equal."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return json.dumps(value)
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
