"""SIGTERM (CI systems, container runtimes) is Ctrl-C (issue 17): partial reports, the suite run marked, exit 143;
an eval calling sys.exit() or leaving a thread running fails or is named, and the suite still ends."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

from niceeval.store import Store

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
async def is_terminated(t):
    Path("started").write_text("yes")  # with concurrency 1, the first eval is reported by now
    await anyio.sleep(60)
"""

CONFIG = "from niceeval import define_config\n\nconfig = define_config(agent=lambda m: 'echo: ' + m, concurrency=1)\n"


def test_sigterm_mid_run_writes_the_partial_reports_marks_the_suite_run_and_exits_143(project: Project) -> None:
    project.write("niceeval.config.py", CONFIG)
    project.write("evals/waiting.py", WAITING)
    report, html = project.out / "report.json", project.out / "report.html"
    env = {k: v for k, v in os.environ.items() if not k.startswith("NICEEVAL")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "niceeval.cli", "run", "--json", str(report), "--html", str(html)],
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
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 143, stderr
    assert "niceeval: terminated" in stderr and "Traceback" not in stderr
    data = json.loads(report.read_text(encoding="utf-8"))
    assert (data["interrupted"], data["exit_code"]) == (True, 143)  # the report states the code the process exits with
    assert [e["id"].rsplit("::")[-1] for e in data["evals"] if e["runs"]] == ["finishes_first"]
    assert html.is_file()
    with Store.open(str(project.root / ".niceeval" / "results.db")) as store:
        (info,) = store.runs()
        assert (info.status, info.runs_done) == ("interrupted", 1)


EXITING = """\
import sys
import threading
import time

from niceeval import define_eval


@define_eval
async def calls_sys_exit(t):
    await t.send("hi")
    sys.exit(3)


@define_eval
def raises_keyboard_interrupt(t):
    raise KeyboardInterrupt


@define_eval
async def leaves_a_thread_running(t):
    threading.Thread(target=time.sleep, args=(600,), name="forgotten-poller").start()
    await t.send("hi")


@define_eval
async def runs_after_them(t):
    await t.send("hi")
"""


def test_sys_exit_fails_only_its_eval_and_a_stray_thread_does_not_keep_the_process(project: Project) -> None:
    project.write("niceeval.config.py", CONFIG)
    project.write("evals/exiting.py", EXITING)
    result = project.run(timeout=60)
    assert result.code == 1, result.output
    report = result.report()
    assert (report["exit_code"], report["interrupted"]) == (1, False)
    exited = result.eval("calls_sys_exit")["runs"][0]
    assert exited["outcome"] == "failed"
    assert exited["error"]["message"].startswith("the eval called sys.exit(3)")
    interrupted = result.eval("raises_keyboard_interrupt")["runs"][0]
    assert interrupted["error"]["message"].startswith("the eval raised KeyboardInterrupt")
    assert result.eval("runs_after_them")["runs"][0]["outcome"] == "passed"
    assert result.eval("leaves_a_thread_running")["runs"][0]["outcome"] == "passed"
    assert "'forgotten-poller' (started during evals/exiting.py::leaves_a_thread_running)" in result.stderr
    assert result.wall_s < 60
