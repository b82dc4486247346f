"""docs/online.md's example is real: its files are written into a project, watched, and a trace sent to it."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from niceeval.store import Store

DOCS = Path(__file__).resolve().parent.parent.parent / "docs"
BLOCK = re.compile(r"```python\n# file: (?P<path>\S+)\n(?P<body>.*?)```", re.S)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.slow
@pytest.mark.timeout(90)
def test_the_online_page_example_watches_and_scores_a_trace(tmp_path: Path) -> None:
    blocks = {b["path"]: b["body"] for b in BLOCK.finditer((DOCS / "online.md").read_text())}
    assert sorted(blocks) == ["evals/online.py", "send_trace.py"]
    port = free_port()
    for path, body in blocks.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(body.replace("4318", str(port)))
    watch = subprocess.Popen(
        [sys.executable, "-m", "niceeval.cli", "watch", "--port", str(port), "--grace", "0.2", "--duration", "6"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(f"http://127.0.0.1:{port}/status", timeout=1)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline and watch.poll() is None, watch.communicate()
                time.sleep(0.1)
        sent = subprocess.run([sys.executable, "send_trace.py"], cwd=tmp_path, capture_output=True, text=True)
        out, err = watch.communicate(timeout=60)
    finally:
        watch.kill()
    assert watch.returncode == 0, out + err
    code, trace_id = sent.stdout.split()
    assert code == "200"
    assert "2 online eval(s)" in err and "1 trace(s) closed" in err
    store = Store.open(str(tmp_path / ".niceeval" / "results.db"))
    try:
        (run,) = store.runs()
        results = {r.eval_id: r for r in store.results(run.id)}
    finally:
        store.close()
    refunds = results["evals/online.py::refunds"]
    assert (refunds.outcome, refunds.case_id) == ("passed", trace_id)
    assert [a.name for a in refunds.assertions] == [
        "includes('refund')",
        "called_tool('lookup_order')",
        "no_error_spans",
    ]
