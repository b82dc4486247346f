"""What tracing costs: the OTLP receiver's ingest rate, and the wall time `traces=True` adds to a judged suite.

Run by hand (pytest does not collect it):

    python bench/tracing.py [--evals 1000] [--latency 0.05] [--concurrency 64] [--batches 200] [--senders 4]

Ingest: the suite's receiver (uvicorn on its own thread) with one eval run open takes `--batches` OTLP/HTTP
exports of 512 spans each (the SDK's default batch; GenAI attributes on every span), pre-encoded, POSTed by
`--senders` threads; the rate is spans routed to the run per second of wall time, protobuf and JSON. In
process, the same number of SDK spans go through the span router (`tracing._sdk`) under a run's context.

Suite: bench/judge_suite.py's project (`--evals` evals, one agent call and one rubric judge call each, the server
at `--latency`), its agent a pydantic-ai agent over the server (`pydantic_ai_agent(..., base_url=)`), run by the
real `niceeval run --no-cache` with `traces=False` and with `traces=True` (pydantic-ai's instrumentation on per
run, each run's spans collected, settled and stored in the JSON report).
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path

import anyio
import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from judge_suite import RUBRIC, measure, start_server  # noqa: E402

from niceeval.tracing._collector import TraceCollector, TraceLimits  # noqa: E402
from niceeval.tracing._receiver import TraceReceiver  # noqa: E402

BATCH = 512


def payload(trace_id: str, parent: str, encoding: str) -> bytes:
    """One OTLP export of `BATCH` spans under `parent`: model calls and tool runs with GenAI attributes."""
    from google.protobuf import json_format
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    request = ExportTraceServiceRequest()
    scope = request.resource_spans.add().scope_spans.add()
    scope.scope.name = "bench"
    for i in range(BATCH):
        span = scope.spans.add()
        span.trace_id, span.span_id = bytes.fromhex(trace_id), secrets.token_bytes(8)
        span.parent_span_id = bytes.fromhex(parent)
        span.name, span.start_time_unix_nano, span.end_time_unix_nano = f"span {i}", 1_000 + i, 2_000 + i
        for key, value in (("gen_ai.operation.name", "execute_tool" if i % 2 else "chat"), ("gen_ai.tool.name", "f")):
            attribute = span.attributes.add()
            attribute.key, attribute.value.string_value = key, value
        attribute = span.attributes.add()
        attribute.key, attribute.value.int_value = "gen_ai.usage.input_tokens", 100 + i
    if encoding == "protobuf":
        return request.SerializeToString()
    data = json_format.MessageToDict(request)
    for item in data["resourceSpans"][0]["scopeSpans"][0]["spans"]:  # OTLP/JSON writes ids as hex
        for key in ("traceId", "spanId", "parentSpanId"):
            item[key] = bytes(__import__("base64").b64decode(item[key])).hex()
    return json.dumps(data).encode()


def ingest(batches: int, senders: int, encoding: str) -> float:
    """Spans per second the receiver routes to an open run."""
    collector = TraceCollector(TraceLimits(max_spans=batches * BATCH + 1))
    receiver = TraceReceiver(collector).start()
    run = collector.open_run()
    body = payload(run.trace_id, run.root_span_id, encoding)
    media = "application/x-protobuf" if encoding == "protobuf" else "application/json"

    def send(count: int) -> None:
        with httpx.Client(timeout=60) as client:
            for _ in range(count):
                client.post(receiver.endpoint, content=body, headers={"content-type": media}).raise_for_status()

    share = [batches // senders + (1 if i < batches % senders else 0) for i in range(senders)]
    threads = [threading.Thread(target=send, args=(n,)) for n in share]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - started
    assert len(run.spans) == batches * BATCH, len(run.spans)
    anyio.run(receiver.close)
    return batches * BATCH / wall


def in_process(spans: int) -> float:
    """Spans per second through the SDK span router into an open run."""
    from opentelemetry import trace

    from niceeval.tracing._sdk import capture, under

    collector = TraceCollector(TraceLimits(max_spans=spans + 1))
    capture(collector)
    tracer = trace.get_tracer("bench")
    run = collector.open_run()
    started = time.perf_counter()
    with under(run):
        for i in range(spans):
            with tracer.start_as_current_span("s", attributes={"gen_ai.operation.name": "chat", "i": i}):
                pass
    wall = time.perf_counter() - started
    assert len(run.spans) == spans
    return spans / wall


def write_project(folder: Path, url: str, evals: int, traces: bool) -> None:
    (folder / "evals").mkdir(parents=True)
    (folder / "niceeval.config.py").write_text(
        textwrap.dedent(f"""\
        from pydantic_ai import Agent

        from niceeval import define_config
        from niceeval.agents import pydantic_ai_agent

        agent = Agent("openai-chat:scripted", defer_model_check=True)
        config = define_config(
            agent=pydantic_ai_agent(agent, base_url="{url}", api_key="bench", traces={traces}),
            judge={{"model": "openai/gpt-4o-mini"}},
            timeout=120,
        )
        """)
    )
    body = ["from niceeval import define_eval", ""]
    for i in range(evals):
        body += ["@define_eval", f"async def judged_{i}(t):", f"    await t.send('Where is my order {i}?')"]
        body += [f"    t.judge.rubric({RUBRIC!r})", ""]
    (folder / "evals" / "judged.py").write_text("\n".join(body))


def suite(evals: int, latency: float, concurrency: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        server = start_server(latency, folder / "server.log")
        try:
            env = {**os.environ, "OPENAI_API_KEY": "bench", "OPENAI_BASE_URL": server.url}
            for traces in (False, True, False, True):
                project = folder / f"project-{traces}-{time.monotonic_ns()}"
                write_project(project, server.url, evals, traces)
                command = [sys.executable, "-m", "niceeval.cli", "run", "--no-cache", "--no-store"]
                command += ["--concurrency", str(concurrency), "--json", str(project / "report.json")]
                done = measure(command, project, env)
                if done.returncode != 0:
                    raise SystemExit(done.output[-3000:])
                report = json.loads((project / "report.json").read_text())
                spans = sum(len(r["spans"]) for e in report["evals"] for r in e["runs"])
                print(
                    f"traces={traces!s:5}  wall {done.wall_s:6.2f} s  cpu {done.cpu_s:6.1f} s  "
                    f"RSS {done.peak_rss_mb:5.0f} MB  spans {spans}"
                )
        finally:
            server.process.terminate()
            server.process.wait(timeout=10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--evals", type=int, default=1000)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--batches", type=int, default=200)
    parser.add_argument("--senders", type=int, default=4)
    args = parser.parse_args()
    print(f"{os.cpu_count()} CPUs")
    for encoding in ("protobuf", "json"):
        rate = ingest(args.batches, args.senders, encoding)
        print(f"OTLP/HTTP {encoding:8}: {rate:10,.0f} spans/s ({args.batches} x {BATCH}, {args.senders} senders)")
    print(f"in process (SDK router): {in_process(args.batches * BATCH // 4):10,.0f} spans/s")
    suite(args.evals, args.latency, args.concurrency)


if __name__ == "__main__":
    main()
