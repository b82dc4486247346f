"""A coding agent's real CLI runs inside the Docker sandbox: the pinned Claude Code and Codex (from .tools, mounted
read-only; Codex as the static binary its npm package ships, so the image needs no Node.js) talk to the offline model
server through the forwarded endpoint, edit the workspace, and their shell commands run in the container: a write
outside the workspace and a connection to another port of the host fail there. The example's Dockerfile variant
passes with both."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from docker_helpers import BASE_IMAGE, needs_docker

from niceeval import EvalContext, define_eval
from niceeval._core.events import ActionCalledEvent
from niceeval._run.discovery import EvalEntry
from niceeval._run.execute import ExecOptions, execute
from niceeval.agents import CodingAgentOptions, claude_code_agent, codex_agent
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


def codex_binary() -> Path:
    """Codex's static binary, shipped in its npm package beside the Node.js launcher."""
    binary = TOOLS / "@openai" / "codex-linux-x64" / "vendor" / "x86_64-unknown-linux-musl" / "bin" / "codex"
    if not binary.exists():
        reason = "the pinned Codex is not installed (run bash scripts/coding-clis.sh)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true but {reason}", pytrace=False)
        pytest.skip(reason)
    return binary.resolve()


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


def test_codex_works_inside_the_container_without_node_and_cannot_get_out(tmp_path: Path) -> None:
    needs_docker()
    binary = codex_binary()
    fixture = tmp_path / "fixtures" / "greeter"
    fixture.mkdir(parents=True)
    (fixture / "greeter.py").write_text("def greet(name):\n    return 'hi'\n")
    (fixture / "EVAL.py").write_text(
        "from greeter import greet\n\n\ndef test_greets_by_name():\n    assert greet('Ada') == 'Hello, Ada!'\n"
    )
    outside = tmp_path / "escaped.txt"
    with LLMServer() as server, LLMServer() as other:
        connect = f"python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {other.port}), timeout=5)'"
        commands = [
            f"cat > greeter.py <<'PY'\n{GREETER}PY",
            "test -f /.dockerenv && ! command -v node && echo in-container-without-node",
            f"echo x > {outside}",
            connect,
        ]

        def script(request: LLMRequest) -> Reply:
            step = tool_results(request)
            if step < len(commands):
                return Reply(tool_calls=[ToolCall(name="exec_command", arguments={"cmd": commands[step]})])
            return Reply(text="Fixed greet().")

        server.set_script(script)
        agent = codex_agent(
            CodingAgentOptions(executable=binary, model="gpt-5", api_key="test-key", base_url=server.base_url)
        )
        environment = docker_sandbox(image=BASE_IMAGE, read_only=[binary.parents[5]])

        @define_eval(fixture="fixtures/greeter", agent=agent, sandbox=environment)
        async def fixes_greet(t: EvalContext) -> None:
            turn = await t.send("Make greet() say Hello, NAME!")
            t.check(turn.message, equals("Fixed greet()."))

        entry = EvalEntry(id="agents.py::codex_fixes_greet", spec=fixes_greet)
        result = anyio.run(execute, entry, 0, ExecOptions(timeout=120, root=tmp_path))
    assert result.error is None, result.error
    assert {a.name: a.state for a in result.assertions}["EVAL.py::test_greets_by_name"] == "passed"
    write, inside, escape, reach = [e for e in result.events if isinstance(e, ActionCalledEvent)]
    assert (write.status, inside.status) == ("success", "success")
    assert "in-container-without-node" in str(inside.output)
    assert escape.status == "failed" and not outside.exists()
    assert reach.status == "failed" and "Connection refused" in str(reach.output)
    assert result.sandbox is not None and result.sandbox.kind == "docker"
    assert result.outcome == "passed"


EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "coding_agents"


def test_the_examples_dockerfile_variant_passes_with_both_clis(tmp_path: Path) -> None:
    needs_docker()
    claude_binary(), codex_binary()  # skip (or fail under CI) when they are missing
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    report = tmp_path / "report.json"
    done = subprocess.run(
        [sys.executable, "-m", "niceeval.cli", "run", "--no-store", "--json", str(report), "evals/greeter_docker.py"],
        cwd=EXAMPLE,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    runs = {entry["id"].split("[", 1)[1]: entry["runs"][0] for entry in json.loads(report.read_text())["evals"]}
    assert {variant: run["outcome"] for variant, run in runs.items()} == {
        "agent=claude]": "passed",
        "agent=codex]": "passed",
    }
    for run in runs.values():
        assert run["sandbox"]["kind"] == "docker" and run["sandbox"]["image"].startswith("niceeval-build:")
        assert "greeter.py" in run["workspace_diff"]
