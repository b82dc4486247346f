"""niceeval's own runs as OpenTelemetry traces: suite -> eval run -> turn -> judge call, exported over OTLP/HTTP.

`niceeval run --otel-endpoint URL` (or the standard `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` /
`OTEL_EXPORTER_OTLP_ENDPOINT`) sends one trace per suite, so evals show up next to production traces in Jaeger,
Tempo, Phoenix or Logfire. Spans are built from each finished run's record (its duration, its messages' times,
its judge calls' latencies) with a tracer provider of its own: the application's global provider is left alone.
A judge call's start is its run's end minus its latency (the record keeps latency, not start); every other time
is as recorded.

Every assertion goes out as the OpenTelemetry GenAI event `gen_ai.evaluation.result` (name, score, label,
explanation) on its run's span. `EvaluationExporter` sends online results (`niceeval watch`) the same way, each on
a span inside the production trace it scored, under that trace's root span.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from niceeval._core.assertion import AssertionResult
from niceeval._core.events import MessageEvent, UsageEvent
from niceeval._core.results import RunResult
from niceeval._core.summary import PlannedEval, Problem, SuiteSummary
from niceeval._core.values import head

ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
EVALUATION_EVENT = "gen_ai.evaluation.result"
"""The OpenTelemetry GenAI semantic conventions' event for one evaluation's result."""
_EXPLANATION_CHARS = 4_000


def evaluation_attributes(assertion: AssertionResult) -> dict[str, str | float]:
    """The `gen_ai.evaluation.result` attributes of one assertion.

    Its name, its score (when it has one), its state as the label (`passed`, `failed`, `scored`, `inconclusive`),
    its reason as the explanation, and for an inconclusive judge the cause as `error.type`.
    """
    attributes: dict[str, str | float] = {
        "gen_ai.evaluation.name": assertion.name,
        "gen_ai.evaluation.score.label": assertion.state,
    }
    if assertion.score is not None:
        attributes["gen_ai.evaluation.score.value"] = assertion.score
    if assertion.reason:
        attributes["gen_ai.evaluation.explanation"] = head(assertion.reason, _EXPLANATION_CHARS)
    if assertion.cause is not None:
        attributes["error.type"] = assertion.cause
    return attributes


def otel_endpoint(flag: str | None) -> str | None:
    """Where to export: `--otel-endpoint`, else the standard OTLP environment variables, else nowhere."""
    if flag:
        return flag
    if os.environ.get(ENDPOINT_VARIABLES[0]):
        return os.environ[ENDPOINT_VARIABLES[0]]
    base = os.environ.get(ENDPOINT_VARIABLES[1])
    return base.rstrip("/") + "/v1/traces" if base else None


class OtelReporter:
    """Exports the suite's trace. Built before the event loop starts (it imports the SDK); `finish` flushes."""

    def __init__(self, endpoint: str, *, run_id: str | None = None, timeout: float = 10.0) -> None:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        self.endpoint = endpoint
        self._provider = TracerProvider(resource=Resource.create({"service.name": "niceeval"}))
        self._provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint, timeout=timeout)))
        self._tracer = self._provider.get_tracer("niceeval")
        self._run_id = run_id
        self._suite: Any = None

    def start(self, plan: Sequence[PlannedEval], problems: Sequence[Problem]) -> None:
        """Open the suite's span."""
        attributes: dict[str, str | int] = {"niceeval.evals": len(plan), "niceeval.problems": len(problems)}
        if self._run_id:
            attributes["niceeval.run_id"] = self._run_id
        self._suite = self._tracer.start_span("niceeval suite", attributes=attributes)

    def run_finished(self, result: RunResult) -> None:
        """The run's span, its turns and its judge calls, with the times the record keeps."""
        from opentelemetry import trace
        from opentelemetry.trace import Status, StatusCode

        end = time.time_ns()
        start = end - int(result.duration_s * 1e9)
        parent = trace.set_span_in_context(self._suite)
        usage = [e for e in result.events if isinstance(e, UsageEvent) and e.billed_to == "agent"]
        run = self._tracer.start_span(
            f"eval {result.eval_id}",
            context=parent,
            start_time=start,
            attributes={
                "niceeval.eval_id": result.eval_id,
                "niceeval.run_index": result.run_index,
                "niceeval.outcome": result.outcome,
                "code.filepath": result.file,
                "code.lineno": result.line,
                "gen_ai.usage.input_tokens": sum(u.input_tokens + u.cache_read_tokens for u in usage),
                "gen_ai.usage.output_tokens": sum(u.output_tokens for u in usage),
            },
        )
        if result.outcome == "failed" or result.error is not None:
            run.set_status(Status(StatusCode.ERROR, result.error.message if result.error else result.outcome))
        context = trace.set_span_in_context(run)
        self._turns(result, context, start, end)
        for assertion in result.assertions:
            self._judge_calls(assertion, context, end)
            run.add_event(EVALUATION_EVENT, evaluation_attributes(assertion), timestamp=end)
        run.end(end_time=end)

    def _turns(self, result: RunResult, context: Any, start: int, end: int) -> None:
        messages = [e for e in result.events if isinstance(e, MessageEvent) and e.role != "system"]
        sent = [(i, e) for i, e in enumerate(messages) if e.role == "user"]
        for number, (index, message) in enumerate(sent, start=1):
            reply = next((e for e in messages[index + 1 :] if e.role == "assistant"), None)
            usage = [
                e
                for e in result.events
                if isinstance(e, UsageEvent)
                and e.billed_to == "agent"
                and message.seq < e.seq <= (reply.seq if reply else e.seq)
            ]
            turn = self._tracer.start_span(
                f"invoke_agent turn {number}",
                context=context,
                start_time=_clamp(_ns(message.at), start, end),
                attributes={
                    "gen_ai.operation.name": "invoke_agent",
                    "niceeval.turn": number,
                    "gen_ai.usage.input_tokens": sum(u.input_tokens + u.cache_read_tokens for u in usage),
                    "gen_ai.usage.output_tokens": sum(u.output_tokens for u in usage),
                },
            )
            turn.end(end_time=_clamp(_ns(reply.at), start, end) if reply is not None else end)

    def _judge_calls(self, assertion: AssertionResult, context: Any, end: int) -> None:
        for call in assertion.judge_calls:
            provider, _, model = call.model.rpartition("/")
            span = self._tracer.start_span(
                f"chat {model}",
                context=context,
                start_time=end - int(call.latency * 1e9),
                attributes={
                    "gen_ai.operation.name": "chat",
                    "gen_ai.provider.name": provider or "openai",
                    "gen_ai.request.model": model,
                    "gen_ai.usage.input_tokens": call.input_tokens + call.cache_read_tokens,
                    "gen_ai.usage.output_tokens": call.output_tokens,
                    "gen_ai.usage.cache_read.input_tokens": call.cache_read_tokens,
                    "niceeval.assertion": assertion.name,
                    "niceeval.judge.cached": call.cached,
                    **({"niceeval.judge.score": call.score} if call.score is not None else {}),
                },
            )
            span.end(end_time=end)

    def finish(self, summary: SuiteSummary) -> None:
        """Close the suite's span and flush (bounded by the exporter's timeout)."""
        if self._suite is not None:
            self._suite.set_attribute("niceeval.exit_code", summary.exit_code)
            self._suite.end()
        self._provider.shutdown()


def _ns(when: datetime) -> int:
    return int(when.timestamp() * 1e9)


def _clamp(value: int, low: int, high: int) -> int:
    return max(low, min(value, high))


class EvaluationExporter:
    """Online results as OpenTelemetry spans, one `gen_ai.evaluation.result` event per assertion.

    Each result is a span `evaluation EVAL` inside the production trace it scored, under its root span. `close`
    flushes.
    """

    def __init__(self, endpoint: str, *, timeout: float = 10.0) -> None:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        self.endpoint = endpoint
        self._provider = TracerProvider(resource=Resource.create({"service.name": "niceeval"}))
        self._provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint, timeout=timeout)))
        self._tracer = self._provider.get_tracer("niceeval")

    def export(self, result: RunResult, *, trace_id: str, parent_span_id: str) -> None:
        """Queue `result`'s span in trace `trace_id` under span `parent_span_id` (hex ids); never blocks."""
        from opentelemetry import trace
        from opentelemetry.trace import NonRecordingSpan, SpanContext, Status, StatusCode, TraceFlags

        scored = SpanContext(
            trace_id=int(trace_id, 16), span_id=int(parent_span_id, 16), is_remote=True, trace_flags=TraceFlags(1)
        )
        end = time.time_ns()
        span = self._tracer.start_span(
            f"evaluation {result.eval_id}",
            context=trace.set_span_in_context(NonRecordingSpan(scored)),
            start_time=end - int(result.duration_s * 1e9),
            attributes={
                "gen_ai.operation.name": "evaluation",
                "niceeval.eval_id": result.eval_id,
                "niceeval.outcome": result.outcome,
                "code.filepath": result.file,
                "code.lineno": result.line,
            },
        )
        for assertion in result.assertions:
            span.add_event(EVALUATION_EVENT, evaluation_attributes(assertion), timestamp=end)
        if result.error is not None:
            span.set_status(Status(StatusCode.ERROR, f"{result.error.type}: {result.error.message}"))
        span.end(end_time=end)

    def close(self) -> None:
        """Flush what is queued (bounded by the exporter's timeout) and stop."""
        self._provider.shutdown()
