"""Online results out as OpenTelemetry: each scored trace gets a span with its `gen_ai.evaluation.result` events."""

from __future__ import annotations

from niceeval._core.results import RunResult
from niceeval.report.otel import EvaluationExporter
from niceeval.tracing import Trace


class OtelSink:
    """Sends each online result into the production trace it scored, under the trace's root span."""

    def __init__(self, exporter: EvaluationExporter) -> None:
        self.exporter = exporter

    def took(self, result: RunResult, trace: Trace) -> None:
        self.exporter.export(result, trace_id=trace.trace_id, parent_span_id=trace.root.span_id)
