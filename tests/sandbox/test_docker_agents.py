"""A coding agent's real CLI runs inside the Docker sandbox: the pinned Claude Code (from .tools, mounted read-only)
talks to the offline model server through the forwarded endpoint, edits the workspace, and its shell commands run in
the container: a write outside the workspace and a connection to another port of the host fail there."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import anyio
import pytest
from docker_helpers import BASE_IMAGE, needs_docker

from niceeval import EvalContext, define_eval
from niceeval._core.events import ActionCalledEvent
from niceeval._run.discovery import EvalEntry
from niceeval._run.execute import ExecOptions, execute
from niceeval.agents import CodingAgentOptions, claude_code_agent
from niceeval.expect import equals
from niceeval.sandbox import docker_sandbox
from niceeval.testing import LLMRequest, LLMServer, Reply, ToolCall

pytestmark = pytest.mark.slow

TOOLS = Path(__file__).resolve().parents[2] / ".tools" / "npm" / "node_modules"
GREETER = "def greet(name):\n    return f'Hello, {name}!'\n"


def claude_binary() -> Path:
    binary = TOOLS / ".bin" / "claude"
    if not binary.exists():
        reason = "the pinned Claude Code is not installed (run bash scripts/coding-clis.sh)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true but {reason}", pytrace=False)
        pytest.skip(reason)
    return binary.resolve()  # the package's own path: the container mounts that folder, not the links to it


def tool_results(request: LLMRequest) -> int:
    return sum(1 for m in request.messages if m.role == "tool")


def test_claude_code_works_inside_the_container_and_cannot_get_out(tmp_path: Path) -> None:
    needs_docker()
    binary = claude_binary()
    fixture = tmp_path / "fixtures" / "greeter"
    fixture.mkdir(parents=True)
    (fixture / "greeter.py").write_text("def greet(name):\n    return 'hi'\n")
    (fixture / "EVAL.py").write_text(
        "from greeter import greet\n\n\ndef test_greets_by_name():\n    assert greet('Ada') == 'Hello, Ada!'\n"
    )
    outside = tmp_path / "escaped.txt"
    with LLMServer() as server, LLMServer() as other:
        connect = f"python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {other.port}), timeout=5)'"
        steps = [
            lambda path: ToolCall(name="Read", arguments={"file_path": path}),
            lambda path: ToolCall(name="Write", arguments={"file_path": path, "content": GREETER}),
            lambda path: ToolCall(name="Bash", arguments={"command": "test -f /.dockerenv && echo in-container"}),
            lambda path: ToolCall(name="Bash", arguments={"command": f"echo x > {outside}"}),
            lambda path: ToolCall(name="Bash", arguments={"command": connect}),
        ]

        def script(request: LLMRequest) -> Reply:
            workspace = re.search(r"(/\S*/workspace)\b", json.dumps(request.body))
            assert workspace is not None
            step = tool_results(request)
            if step < len(steps):
                return Reply(tool_calls=[steps[step](workspace.group(1) + "/greeter.py")])
            return Reply(text="Fixed greet().")

        server.set_script(script)
        agent = claude_code_agent(
            CodingAgentOptions(executable=binary, model="claude-sonnet-4-5", api_key="test-key", base_url=server.url)
        )
        environment = docker_sandbox(image=BASE_IMAGE, read_only=[binary.parents[3]])

        @define_eval(fixture="fixtures/greeter", agent=agent, sandbox=environment)
        async def fixes_greet(t: EvalContext) -> None:
            turn = await t.send("Make greet() say Hello, NAME!")
            t.check(turn.message, equals("Fixed greet()."))

        entry = EvalEntry(id="agents.py::fixes_greet", spec=fixes_greet)
        result = anyio.run(execute, entry, 0, ExecOptions(timeout=120, root=tmp_path))
    assert result.error is None, result.error
    assert {a.name: a.state for a in result.assertions}["EVAL.py::test_greets_by_name"] == "passed", [
        (a.name, a.reason) for a in result.assertions
    ] + [e.model_dump() for e in result.events][:4]
    read, write, inside, escape, reach = [e for e in result.events if isinstance(e, ActionCalledEvent)]
    assert (read.status, write.status, inside.status) == ("success", "success", "success")
    assert "in-container" in str(inside.output)
    assert escape.status == "failed" and not outside.exists()
    assert reach.status == "failed" and "Connection refused" in str(reach.output)
    assert result.outcome == "passed"
