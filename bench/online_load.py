"""`niceeval watch` under a sustained load: OTLP/JSON at a fixed span rate, online evals sampling 10%.

Run by hand (pytest does not collect it):

    python bench/online_load.py [--spans-per-second 5000] [--seconds 60] [--spans-per-trace 10] [--store]

A project with one online eval (`sample=0.1`: a matcher, a scoped assertion and a span assertion) is watched by
the real `niceeval watch` in a subprocess. A sender thread POSTs pre-encoded OTLP/JSON exports (50 traces each, a
root span and its children with GenAI attributes, fresh trace ids) on a fixed schedule to reach the rate. It
reports the requests that failed, the answers' latency, the rate reached, the watcher's resident memory every 5 s
(flat is the point), and `/status` at the end.
"""

from __future__ import annotations

import argparse
import json
import secrets
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

TRACES_PER_REQUEST = 50
EVAL = """
from niceeval import define_eval
from niceeval.expect import includes


@define_eval(online=True, sample=0.1)
def sampled(t):
    t.check(t.reply, includes("refund"))
    t.called_tool("lookup")
    t.no_error_spans()
"""


def export(spans_per_trace: int) -> bytes:
    """One OTLP/JSON export of `TRACES_PER_REQUEST` whole traces with fresh ids."""
    spans = []
    for _ in range(TRACES_PER_REQUEST):
        trace_id, root = secrets.token_hex(16), secrets.token_hex(8)
        spans.append(_span(trace_id, root, None, {"openinference.span.kind": "AGENT", "input.value": "refund?",
                                                  "output.value": "your refund is on its way"}))  # fmt: skip
        for i in range(spans_per_trace - 1):
            kind = (
                {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup"}
                if i % 2
                else {
                    "gen_ai.operation.name": "chat",
                    "gen_ai.request.model": "gpt-5-mini",
                    "gen_ai.provider.name": "openai",
                }
            )
            spans.append(_span(trace_id, secrets.token_hex(8), root, kind))
    body = {"resourceSpans": [{"resource": {"attributes": [_attr("service.name", "bench")]},
                               "scopeSpans": [{"scope": {"name": "bench"}, "spans": spans}]}]}  # fmt: skip
    return json.dumps(body).encode()


def _span(trace_id: str, span_id: str, parent: str | None, attributes: dict[str, str]) -> dict[str, object]:
    return {"traceId": trace_id, "spanId": span_id, "parentSpanId": parent or "", "name": "op", "kind": 1,
            "startTimeUnixNano": "1000000000", "endTimeUnixNano": "2000000000",
            "attributes": [_attr(k, v) for k, v in attributes.items()]}  # fmt: skip


def _attr(key: str, value: str) -> dict[str, object]:
    return {"key": key, "value": {"stringValue": value}}


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--spans-per-second", type=int, default=5_000)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--spans-per-trace", type=int, default=10)
    parser.add_argument("--store", action="store_true", help="store the results (default: --no-store)")
    args = parser.parse_args()
    per_request = TRACES_PER_REQUEST * args.spans_per_trace
    requests_per_second = args.spans_per_second / per_request
    total = int(requests_per_second * args.seconds)
    print(f"pre-encoding {total} exports of {per_request} spans ...", flush=True)
    bodies = [export(args.spans_per_trace) for _ in range(total)]
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    project = Path(tempfile.mkdtemp(prefix="online-load-"))
    (project / "evals").mkdir()
    (project / "evals" / "online.py").write_text(EVAL)
    command = [sys.executable, "-m", "niceeval.cli", "watch", "--port", str(port), "--grace", "1"]
    command += [] if args.store else ["--no-store"]
    watch = subprocess.Popen(command, cwd=project, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"
    while True:
        try:
            httpx.get(f"{url}/status", timeout=1)
            break
        except httpx.TransportError:
            time.sleep(0.1)
    memory: list[tuple[float, float]] = []
    latencies: list[float] = []
    failures: list[str] = []
    started = time.monotonic()

    def send() -> None:
        with httpx.Client(timeout=30) as client:
            for index, body in enumerate(bodies):
                due = started + index / requests_per_second
                time.sleep(max(0.0, due - time.monotonic()))
                sent = time.monotonic()
                try:
                    answer = client.post(f"{url}/v1/traces", content=body, headers={"content-type": "application/json"})
                except httpx.HTTPError as exc:
                    failures.append(f"{type(exc).__name__}: {exc}")
                    continue
                latencies.append(time.monotonic() - sent)
                if answer.status_code != 200 or answer.content not in (b"{}", b""):
                    failures.append(f"{answer.status_code}: {answer.text[:200]}")

    sender = threading.Thread(target=send)
    sender.start()
    while sender.is_alive():
        memory.append((time.monotonic() - started, rss_mb(watch.pid)))
        sender.join(timeout=5)
    wall = time.monotonic() - started
    time.sleep(3)
    status = httpx.get(f"{url}/status", timeout=10).json()
    memory.append((time.monotonic() - started, rss_mb(watch.pid)))
    watch.terminate()
    watch.communicate(timeout=60)
    latencies.sort()
    print(f"sent {len(bodies) * per_request:,} spans in {len(bodies)} requests over {wall:.1f} s: "
          f"{len(bodies) * per_request / wall:,.0f} spans/s (target {args.spans_per_second:,})")  # fmt: skip
    print(f"failed requests: {len(failures)} {failures[:3]}")
    if latencies:
        p = lambda q: latencies[min(len(latencies) - 1, int(q * len(latencies)))] * 1000  # noqa: E731
        print(f"answer latency ms: p50 {p(0.5):.0f}, p99 {p(0.99):.0f}, max {latencies[-1] * 1000:.0f}")
    print("watcher RSS MB (s, MB): " + ", ".join(f"({at:.0f}, {mb:.0f})" for at, mb in memory))
    print("status:", json.dumps(status))


if __name__ == "__main__":
    main()
