"""An offline coding agent: reads, writes and runs files in its sandbox workspace through reported tools.

A stand-in for a model-backed coding agent: it applies a fixed edit, but every file read, write and command goes
through `session` so the run's event stream is real and the workspace assertions judge what it actually did.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from niceeval.agents import FunctionSession, function_agent

NEW_GREETER = '''"""A tiny module the coding agent is asked to extend."""


def greet(name: str) -> str:
    return f"Hello, {name}!"


def farewell(name: str) -> str:
    return f"Goodbye, {name}!"
'''


def _workspace(session: FunctionSession) -> Path:
    if session.workspace is None:
        raise RuntimeError("the coding agent needs a sandbox eval: @define_eval(fixture=...)")
    return session.workspace


def _read(session: FunctionSession, path: str) -> str:
    return session.call_tool("read_file", lambda path: (_workspace(session) / path).read_text(), path=path)


def _write(session: FunctionSession, path: str, text: str) -> None:
    def write_file(path: str, text: str) -> int:
        return (_workspace(session) / path).write_text(text)

    session.call_tool("write_file", write_file, path=path, text=text)


def _run(session: FunctionSession, *args: str) -> str:
    done = subprocess.run([sys.executable, *args], cwd=_workspace(session), capture_output=True, text=True, timeout=30)
    status = "success" if done.returncode == 0 else "failed"
    session.tool("python", {"args": list(args)}, output=done.stdout, status=status, kind="shell")
    return done.stdout


def _agent(message: str, session: FunctionSession) -> str:
    source = _read(session, "greeter.py")
    if "farewell" not in message.lower() or "def farewell" in source:
        return "Nothing to change."
    _write(session, "greeter.py", NEW_GREETER)
    shown = _run(session, "-c", "import greeter; print(greeter.farewell('Ada'))").strip()
    return f"Added farewell() and fixed greet's punctuation. Check: {shown}"


coding_agent = function_agent(_agent)
