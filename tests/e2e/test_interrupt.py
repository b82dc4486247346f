"""Ctrl-C mid-run: the reports keep every finished run, and the command exits 130."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

from ._project import Project

WAITING = """\
from pathlib import Path

import anyio
from niceeval import define_eval
from niceeval.expect import includes


@define_eval
async def finishes_first(t):
    await t.send("hi")
    t.check(t.reply, includes("hi"))


@define_eval
async def is_interrupted(t):
    Path("started").write_text("yes")  # with concurrency 1, the first eval is reported by now
    await anyio.sleep(60)
"""


def test_sigint_mid_run_writes_every_finished_run_and_exits_130(project: Project) -> None:
    project.write("niceeval.config.py", "from niceeval import define_config\n\n"
                  "config = define_config(agent=lambda m: 'echo: ' + m, concurrency=1)\n")
    project.write("evals/waiting.py", WAITING)
    report, junit, html = project.out / "report.json", project.out / "report.xml", project.out / "report.html"
    env = {k: v for k, v in os.environ.items() if not k.startswith("NICEEVAL")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "niceeval.cli", "run", "--json", str(report), "--junit", str(junit)]
        + ["--html", str(html)],
        cwd=project.root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while not (project.root / "started").exists():
            assert proc.poll() is None and time.monotonic() < deadline, "the second eval never started"
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr
    doc = json.loads(report.read_text())
    assert (doc["interrupted"], doc["exit_code"]) == (True, 130)
    evals = {e["id"].split("::")[1]: e for e in doc["evals"]}
    assert evals["finishes_first"]["runs"][0]["outcome"] == "passed"
    assert evals["is_interrupted"]["runs"] == [] and evals["is_interrupted"]["status"] is None
    names = [c.get("name") for c in ET.parse(junit).getroot().iter("testcase")]
    assert names == ["finishes_first"]
    page = html.read_text(encoding="utf-8")
    assert "Interrupted after 1 of 2 runs" in page and '<span class="badge skipped">not run</span>' in page
