"""The console's lines on an unbuffered stdout: gathered, written together, in order, and never held for long."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from niceeval._core.paced_lines import PacedLines, sends_each_write


class _Recording(io.StringIO):
    """A stream that keeps each write apart."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[str] = []

    def write(self, text: str) -> int:
        self.writes.append(text)
        return super().write(text)


class _Closed(io.StringIO):
    def write(self, text: str) -> int:
        raise BrokenPipeError("the reader went away")


def _until(check: object, *, within: float = 10.0) -> None:
    deadline = time.monotonic() + within
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, "not within the time allowed"
        time.sleep(0.01)


def test_lines_that_come_together_are_written_together_and_in_order() -> None:
    stream = _Recording()
    lines = PacedLines(stream, pace_s=0.5)
    for i in range(200):
        lines.write(f"line {i}\n")
    _until(lambda: stream.getvalue().count("\n") == 200)
    assert stream.getvalue() == "".join(f"line {i}\n" for i in range(200))
    assert len(stream.writes) < 10  # the 200 lines came within one pace: a few writes, not one per line


def test_a_line_shows_within_the_pace_whatever_comes_after_it() -> None:
    stream = _Recording()
    lines = PacedLines(stream, pace_s=0.05)
    lines.write("first\n")
    _until(lambda: stream.getvalue() == "first\n", within=5.0)  # no later line, no flush: the thread wrote it
    lines.write("second\n")
    _until(lambda: stream.getvalue() == "first\nsecond\n", within=5.0)
    assert stream.writes == ["first\n", "second\n"]


def test_flush_writes_what_is_pending_at_once_on_the_callers_thread() -> None:
    stream = _Recording()
    lines = PacedLines(stream, pace_s=60.0)
    lines.write("a\n")
    lines.write("b\n")
    assert stream.getvalue() == ""  # a minute's pace: the thread has not written yet
    lines.flush()
    assert stream.writes == ["a\nb\n"]
    lines.flush()  # nothing pending: nothing written
    assert stream.writes == ["a\nb\n"]


def test_characters_the_stream_cannot_encode_are_written_as_escapes() -> None:
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding="ascii", write_through=True)
    lines = PacedLines(stream, pace_s=60.0)
    lines.write(" PASS   evals/qa.py::qa[caf\u00e9] \u2713\n")
    lines.flush()
    assert raw.getvalue() == b" PASS   evals/qa.py::qa[caf\\xe9] \\u2713\n"


def test_a_stream_that_breaks_fails_the_next_write_on_the_callers_thread() -> None:
    lines = PacedLines(_Closed(), pace_s=0.01)
    lines.write("lost with the reader\n")  # the thread's write fails: nobody reads any more

    def failed() -> bool:
        try:
            lines.write("again\n")
        except BrokenPipeError:
            return True
        return False

    _until(failed, within=5.0)


def test_only_the_process_own_unbuffered_streams_are_paced() -> None:
    assert not sends_each_write(io.StringIO())  # a test's or a tool's own string
    assert not sends_each_write(io.TextIOWrapper(io.BytesIO(), write_through=True))  # not the process's stdout


@pytest.mark.skipif(sys.platform == "win32", reason="reads the child's pipe as it writes")
def test_niceeval_run_on_an_unbuffered_pipe_shows_each_eval_line_while_the_next_eval_runs(tmp_path: Path) -> None:
    (tmp_path / "evals").mkdir()
    (tmp_path / "evals" / "slow.py").write_text(
        "import time\n"
        "from niceeval import define_eval\n"
        "from niceeval.expect import equals\n\n\n"
        "@define_eval(cases=[{'id': 'fast', 'wait': 0}, {'id': 'slow', 'wait': 6}], timeout=60)\n"
        "def slow(t):\n"
        "    time.sleep(t.case['wait'])\n"
        "    t.check(t.case['id'], equals(t.case['id']))\n"
    )
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "NO_COLOR": "1"}
    command = [sys.executable, "-m", "niceeval", "run", "evals", "--no-store", "--concurrency", "1"]
    child = subprocess.Popen(command, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert child.stdout is not None
    seen: list[tuple[float, str]] = []
    reader = threading.Thread(target=lambda: seen.extend((time.monotonic(), line.decode()) for line in child.stdout))
    reader.start()
    child.wait(timeout=120)
    ended = time.monotonic()
    reader.join(timeout=10)
    child.stdout.close()
    texts = [line for _, line in seen]
    fast = next(at for at, line in seen if "slow[fast]" in line)
    assert ended - fast > 3.0, texts  # shown while the slow case still ran, not held to the end
    order = [next(i for i, line in enumerate(texts) if part in line) for part in ("[fast]", "[slow]", "2 passed")]
    assert order == sorted(order), texts  # the eval lines in the order they finished, the summary after them
