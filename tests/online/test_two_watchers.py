"""Scale beyond one process: two `niceeval watch` processes receiving disjoint traces write one PostgreSQL store."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from niceeval.store import Store
from tests.online.online_helpers import chat_trace
from tests.online.test_docs_online import free_port

EVAL = "from niceeval import define_eval\n\n@define_eval(online=True)\ndef seen(t):\n    t.called_tool('search')\n"


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_two_watchers_with_disjoint_traces_write_one_postgresql_store(tmp_path: Path, postgres: object) -> None:
    url: str = postgres.database()  # type: ignore[attr-defined]
    (tmp_path / "evals").mkdir()
    (tmp_path / "evals" / "online.py").write_text(EVAL)
    ports = [free_port(), free_port()]
    watchers = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "niceeval.cli",
                "watch",
                "--port",
                str(port),
                "--store",
                url,
                "--grace",
                "0.1",
                "--duration",
                "8",
            ],
            cwd=tmp_path,
            stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        for port in ports
    ]
    try:
        for port, watcher in zip(ports, watchers, strict=True):
            deadline = time.monotonic() + 40
            while True:
                try:
                    httpx.get(f"http://127.0.0.1:{port}/status", timeout=1)
                    break
                except httpx.TransportError:
                    assert time.monotonic() < deadline and watcher.poll() is None, watcher.communicate()
                    time.sleep(0.1)
        sent: dict[int, list[str]] = {port: [] for port in ports}
        for i in range(10):
            port = ports[i % 2]
            trace_id, payload = chat_trace(f"q{i}", "a")
            answer = httpx.post(
                f"http://127.0.0.1:{port}/v1/traces", content=payload, headers={"content-type": "application/json"}
            )
            assert answer.status_code == 200
            sent[port].append(trace_id)
        said = [watcher.communicate(timeout=60)[1] for watcher in watchers]
    finally:
        for watcher in watchers:
            watcher.kill()
    assert [w.returncode for w in watchers] == [0, 0], said
    store = Store.open(url)
    try:
        runs = [run for run in store.runs() if run.kind == "online"]
        stored = {run.id: sorted(r.case_id or "" for r in store.results(run.id)) for run in runs}
        statuses = {run.status for run in runs}
    finally:
        store.close()
    assert len(runs) == 2 and statuses == {"finished"}
    assert sorted(stored.values()) == sorted(sorted(ids) for ids in sent.values())
