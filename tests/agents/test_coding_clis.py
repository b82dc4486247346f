"""The real Claude Code and Codex binaries, driven headless against the offline server, scored like any eval.

Each scripted model answer is a tool call the real CLI carries out in the sandbox workspace (write a file, run a
command), so what is scored (the diff, the commands, the hidden EVAL.py) is what the CLI really did.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from coding_clis import cli

from niceeval import EvalContext, define_eval
from niceeval._core.events import ActionCalledEvent, ErrorEvent, UsageEvent
from niceeval._core.results import RunResult
from niceeval._eval.spec import EvalSpec
from niceeval._run.discovery import EvalEntry
from niceeval._run.execute import ExecOptions, execute
from niceeval.agents import CodingAgentOptions, claude_code_agent, codex_agent
from niceeval.expect import equals
from niceeval.sandbox import bwrap_problem
from niceeval.testing import Fault, LLMRequest, LLMServer, Reply, ToolCall

pytestmark = pytest.mark.slow  # each test starts the real CLIs (about a second each on an idle machine)

GREETER = "def greet(name):\n    return f'Hello, {name}!'\n"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    fixture = tmp_path / "fixtures" / "greeter"
    fixture.mkdir(parents=True)
    (fixture / "greeter.py").write_text("def greet(name):\n    return 'hi'\n")
    (fixture / "EVAL.py").write_text(
        "from greeter import greet\n\n\ndef test_greets_by_name():\n    assert greet('Ada') == 'Hello, Ada!'\n"
    )
    plain = tmp_path / "fixtures" / "notes"
    plain.mkdir()
    (plain / "README.md").write_text("notes\n")
    return tmp_path


@pytest.fixture
def server() -> Iterator[LLMServer]:
    with LLMServer() as running:
        yield running


def run(spec: EvalSpec, root: Path) -> RunResult:
    entry = EvalEntry(id=f"coding.py::{spec.name}", spec=spec)
    return anyio.run(execute, entry, 0, ExecOptions(timeout=120, root=root))


def tool_results(request: LLMRequest) -> int:
    return sum(1 for m in request.messages if m.role == "tool")


def workspace_of(request: LLMRequest) -> str:
    """Claude Code tells the model its working directory; its Write tool takes absolute paths."""
    found = re.search(r"(/\S*/workspace)\b", json.dumps(request.body))
    assert found, "Claude Code's prompt names its working directory"
    return found.group(1)


def actions(result: RunResult) -> list[ActionCalledEvent]:
    return [e for e in result.events if isinstance(e, ActionCalledEvent)]


def claude(**fields: Any) -> Any:
    return claude_code_agent(
        CodingAgentOptions(executable=cli("claude"), model="claude-sonnet-4-5", api_key="test-key", **fields)
    )


def codex(**fields: Any) -> Any:
    return codex_agent(CodingAgentOptions(executable=cli("codex"), model="gpt-5", api_key="test-key", **fields))


def test_claude_code_edits_a_file_scored_by_the_hidden_tests(project: Path, server: LLMServer) -> None:
    def script(request: LLMRequest) -> Reply:
        step, path = tool_results(request), workspace_of(request) + "/greeter.py"
        if step == 0:  # Claude Code writes over a file only after reading it
            return Reply(tool_calls=[ToolCall(name="Read", arguments={"file_path": path})])
        if step == 1:
            return Reply(tool_calls=[ToolCall(name="Write", arguments={"file_path": path, "content": GREETER})])
        if step == 2:
            return Reply(tool_calls=[ToolCall(name="Bash", arguments={"command": "echo broken >&2; exit 3"})])
        return Reply(text="Fixed greet().")

    server.set_script(script)

    @define_eval(fixture="fixtures/greeter", agent=claude(base_url=server.url))
    async def fixes_greet(t: EvalContext) -> None:
        turn = await t.send("Make greet() say Hello, NAME!")
        t.check(turn.message, equals("Fixed greet()."))
        t.file_changed("greeter.py")
        t.called_tool("Write", count=1)

    result = run(fixes_greet, project)
    assert result.error is None, result.error
    assert {a.name: a.state for a in result.assertions}["EVAL.py::test_greets_by_name"] == "passed"
    read, write, bash = actions(result)
    assert (read.name, read.status) == ("Read", "success") and "return 'hi'" in str(read.output)
    assert (write.name, write.status, write.kind) == ("Write", "success", "tool")
    assert write.duration is not None and write.duration >= 0
    assert (bash.name, bash.kind, bash.status, bash.exit_code) == ("Bash", "shell", "failed", 3)
    assert "broken" in str(bash.output)
    (usage,) = [e for e in result.events if isinstance(e, UsageEvent)]
    assert usage.model == "anthropic/claude-sonnet-4-5" and usage.input_tokens > 0 and usage.cost
    assert result.outcome == "passed"


def test_codex_runs_commands_and_the_failing_one_is_recorded(project: Path, server: LLMServer) -> None:
    def script(request: LLMRequest) -> Reply:
        step = tool_results(request)
        if step == 0:
            command = f"cat > greeter.py <<'PY'\n{GREETER}PY"
            return Reply(tool_calls=[ToolCall(name="exec_command", arguments={"cmd": command})])
        if step == 1:
            return Reply(tool_calls=[ToolCall(name="exec_command", arguments={"cmd": "ls missing-file"})])
        return Reply(text="Done.")

    server.set_script(script)

    @define_eval(fixture="fixtures/greeter", agent=codex(base_url=server.base_url))
    async def fixes_greet(t: EvalContext) -> None:
        await t.send("Make greet() say Hello, NAME!")
        t.file_changed("greeter.py")
        t.no_failed_shell_commands().label("expected to fail: ls missing-file")

    result = run(fixes_greet, project)
    assert result.error is None, result.error
    states = {a.name: a.state for a in result.assertions}
    assert states["EVAL.py::test_greets_by_name"] == "passed"
    assert states["expected to fail: ls missing-file"] == "failed"
    wrote, listed = actions(result)
    assert (wrote.kind, wrote.status, wrote.exit_code) == ("shell", "success", 0)
    assert (listed.status, listed.exit_code) == ("failed", 2) and "missing-file" in str(listed.output)
    assert listed.duration is not None
    (usage,) = [e for e in result.events if isinstance(e, UsageEvent)]
    assert usage.model == "openai/gpt-5" and usage.input_tokens > 0


@pytest.mark.parametrize("make", [claude, codex], ids=["claude", "codex"])
def test_a_revived_session_continues_the_conversation(make: Any, project: Path, server: LLMServer) -> None:
    def script(request: LLMRequest) -> Reply:
        said = " ".join(m.content for m in request.messages if m.role == "user")
        if "What was the number?" in said:
            return Reply(text="It was 42." if "The number is 42" in said else "I do not know.")
        return Reply(text="Noted.")

    server.set_script(script)
    url = server.url if make is claude else server.base_url

    @define_eval(fixture="fixtures/notes", agent=make(base_url=url))
    async def remembers(t: EvalContext) -> None:
        await t.send("The number is 42.")
        await t.revive()
        turn = await t.send("What was the number?")
        t.check(turn.message, equals("It was 42."))

    result = run(remembers, project)
    assert result.error is None, result.error
    assert result.outcome == "passed", [a.reason for a in result.assertions]
    assert len(server.requests) == 2


@pytest.mark.parametrize("make", [claude, codex], ids=["claude", "codex"])
def test_a_missing_cli_says_how_to_install_it(make: Any, project: Path) -> None:
    agent = (claude_code_agent if make is claude else codex_agent)(executable=str(project / "no-such-cli"))

    @define_eval(fixture="fixtures/notes", agent=agent)
    async def needs_cli(t: EvalContext) -> None:
        await t.send("hi")

    result = run(needs_cli, project)
    assert result.outcome == "failed" and result.error is not None and result.error.type == "CodingAgentError"
    assert re.search(
        r"npm install -g @(anthropic-ai/claude-code@2\.1\.330|openai/codex@0\.169\.0)", result.error.message
    )


def test_a_turn_limit_kills_codex_and_keeps_what_it_did(project: Path, server: LLMServer) -> None:
    server.set_script(lambda request: Reply(tool_calls=[ToolCall(name="exec_command", arguments={"cmd": "echo step"})]))

    @define_eval(fixture="fixtures/notes", agent=codex(base_url=server.base_url, max_turns=2))
    async def loops(t: EvalContext) -> None:
        turn = await t.send("loop forever")
        t.check(turn.status, equals("failed"))

    result = run(loops, project)
    assert result.error is None, result.error
    assert len(actions(result)) == 3  # the third call is past the limit: it is seen, then the CLI is killed
    (stopped,) = [e for e in result.events if isinstance(e, ErrorEvent) and e.error_type == "CodingAgentStopped"]
    assert "turn limit of 2" in stopped.message
    assert result.outcome == "passed"


def shell_call(request: LLMRequest, command: str) -> Reply:
    if request.provider == "anthropic":
        return Reply(tool_calls=[ToolCall(name="Bash", arguments={"command": command})])
    return Reply(tool_calls=[ToolCall(name="exec_command", arguments={"cmd": command})])


@pytest.mark.parametrize("make", [claude, codex], ids=["claude", "codex"])
def test_under_bwrap_the_cli_cannot_write_outside_or_reach_another_port(
    make: Any, project: Path, server: LLMServer
) -> None:
    problem = bwrap_problem()
    if problem is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true but {problem}", pytrace=False)
        pytest.skip(problem)
    outside = project / "escaped.txt"
    with LLMServer() as other:
        attempts = [
            f"echo x > {outside}",
            f"{sys.executable} -c 'import socket; socket.create_connection((\"127.0.0.1\", {other.port}), timeout=5)'",
        ]
        server.set_script(
            lambda r: shell_call(r, attempts[tool_results(r)]) if tool_results(r) < 2 else Reply(text="ok")
        )
        url = server.url if make is claude else server.base_url

        @define_eval(fixture="fixtures/notes", agent=make(base_url=url), sandbox="bwrap")
        async def escapes(t: EvalContext) -> None:
            await t.send("try to escape")

        result = run(escapes, project)
    assert result.error is None, result.error
    write, connect = actions(result)
    assert (write.status, connect.status) == ("failed", "failed")
    assert re.search("No such file|nonexistent|Read-only", str(write.output)), write.output
    assert "Connection refused" in str(connect.output), connect.output
    assert not outside.exists()


EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "coding_agents"


def test_the_example_compares_skills_on_and_off_for_both_clis(tmp_path: Path) -> None:
    cli("claude"), cli("codex")  # skip (or fail under CI) when they are missing
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    report = tmp_path / "report.json"
    done = subprocess.run(
        [sys.executable, "-m", "niceeval.cli", "run", "--no-store", "--json", str(report), "evals/greeter.py"],
        cwd=EXAMPLE,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 1, done.stdout + done.stderr  # the skills-off variants fail the house style
    runs = {entry["id"].split("[", 1)[1]: entry["runs"][0] for entry in json.loads(report.read_text())["evals"]}
    assert {variant: run["outcome"] for variant, run in runs.items()} == {
        "agent=claude,skills=on]": "passed",
        "agent=claude,skills=off]": "failed",
        "agent=codex,skills=on]": "passed",
        "agent=codex,skills=off]": "failed",
    }
    for run_ in runs.values():
        (shell,) = [e for e in run_["events"] if e["type"] == "action.called"]
        assert (shell["kind"], shell["exit_code"]) == ("shell", 0)
        assert "greeter.py" in run_["workspace_diff"]


@pytest.mark.parametrize("sandbox", ["local", "bwrap"])
def test_a_timeout_kills_the_cli_and_keeps_what_it_did(sandbox: str, project: Path, server: LLMServer) -> None:
    if sandbox == "bwrap" and bwrap_problem() is not None:
        pytest.skip(str(bwrap_problem()))
    marker = project / "still-running.txt"

    def script(request: LLMRequest) -> Reply:
        if tool_results(request) == 0:  # a background job that would outlive a careless kill
            return shell_call(request, f"(sleep 4; echo alive > {marker}) > /dev/null 2>&1 &")
        return Reply(fault=Fault.hang())  # then the model never answers

    server.set_script(script)

    @define_eval(fixture="fixtures/notes", agent=codex(base_url=server.base_url, timeout=4), sandbox=sandbox)
    async def hangs(t: EvalContext) -> None:
        turn = await t.send("start, then wait forever")
        t.check(turn.status, equals("failed"))

    result = run(hangs, project)
    assert result.error is None, result.error
    (started,) = actions(result)
    assert started.status == "success"
    (stopped,) = [e for e in result.events if isinstance(e, ErrorEvent) and e.error_type == "CodingAgentStopped"]
    assert "timed out after 4 s" in stopped.message
    assert result.outcome == "passed"
    anyio.run(anyio.sleep, 5)
    assert not marker.exists(), "the CLI's background job outlived it"


MCP_SERVER = """
import json, sys
for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue
    method, answer = message["method"], {}
    if method == "initialize":
        answer = {"protocolVersion": message["params"]["protocolVersion"], "capabilities": {"tools": {}},
                  "serverInfo": {"name": "docs", "version": "1"}}
    elif method == "tools/list":
        answer = {"tools": [{"name": "search_docs", "description": "Search the docs.",
                             "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}}}]}
    elif method == "tools/call":
        answer = {"content": [{"type": "text", "text": "docs say: " + message["params"]["arguments"]["q"]}]}
    print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": answer}), flush=True)
"""


def test_claude_code_gets_its_instructions_and_calls_an_mcp_server(
    project: Path, server: LLMServer, tmp_path: Path
) -> None:
    script_file = tmp_path / "docs_mcp.py"
    script_file.write_text(MCP_SERVER)

    def script(request: LLMRequest) -> Reply:
        body = json.dumps(request.body)
        if "Answer in French." not in body or "mcp__docs__search_docs" not in body:
            return Reply(text="setup missing")
        if tool_results(request) == 0:  # Claude Code defers MCP tools: their schemas load through ToolSearch
            return Reply(tool_calls=[ToolCall(name="ToolSearch", arguments={"query": "select:mcp__docs__search_docs"})])
        if tool_results(request) == 1:
            return Reply(tool_calls=[ToolCall(name="mcp__docs__search_docs", arguments={"q": "greet"})])
        return Reply(text="Bonjour.")

    server.set_script(script)
    agent = claude(
        base_url=server.url,
        instructions="Answer in French.",
        mcp_servers={"docs": {"command": sys.executable, "args": [str(script_file)]}},
        allowed_tools=["ToolSearch", "mcp__docs__search_docs"],
    )

    @define_eval(fixture="fixtures/notes", agent=agent, sandbox="local")
    async def uses_docs(t: EvalContext) -> None:
        turn = await t.send("How do I greet?")
        t.check(turn.message, equals("Bonjour."))
        t.called_tool("mcp__docs__search_docs", input={"q": "greet"}, count=1)

    result = run(uses_docs, project)
    assert result.error is None, result.error
    assert result.outcome == "passed", [(a.name, a.reason) for a in result.assertions]
    search, call = actions(result)
    assert (search.name, call.name, call.status) == ("ToolSearch", "mcp__docs__search_docs", "success")
    assert "docs say: greet" in str(call.output)


def test_codex_loads_the_mcp_servers_it_is_given(project: Path, server: LLMServer, tmp_path: Path) -> None:
    script_file = tmp_path / "docs_mcp.py"
    script_file.write_text(MCP_SERVER)
    server.set_script(["Noted."])
    agent = codex(
        base_url=server.base_url, mcp_servers={"docs": {"command": sys.executable, "args": [str(script_file)]}}
    )

    @define_eval(fixture="fixtures/notes", agent=agent, sandbox="local")
    async def lists_docs(t: EvalContext) -> None:
        await t.send("hi")

    result = run(lists_docs, project)
    assert result.error is None, result.error
    assert "mcp__docs" in [tool.name for tool in server.requests[0].tools]


def test_claude_codes_subagent_is_recorded_as_a_subagent_call(project: Path, server: LLMServer) -> None:
    def script(request: LLMRequest) -> Reply:
        asked = " ".join(m.content for m in request.messages if m.role == "user")
        if "SUBTASK: count the notes" in asked:
            return Reply(text="There is one note.")  # the subagent's own conversation
        if tool_results(request) == 0:
            arguments = {
                "description": "Count",
                "prompt": "SUBTASK: count the notes",
                "subagent_type": "general-purpose",
            }
            return Reply(tool_calls=[ToolCall(name="Agent", arguments=arguments)])
        return Reply(text="One note.")

    server.set_script(script)

    @define_eval(fixture="fixtures/notes", agent=claude(base_url=server.url, allowed_tools=["Agent", "Task"]))
    async def delegates(t: EvalContext) -> None:
        await t.send("How many notes are there?")

    result = run(delegates, project)
    assert result.error is None, result.error
    (subagent,) = [e for e in result.events if e.type == "subagent.called"]
    assert (subagent.name, subagent.status) == ("general-purpose", "success")
    assert subagent.input["prompt"] == "SUBTASK: count the notes"
    # Claude Code 2.1.330 runs subagents in the background: the call's result is its launch notice.
    assert "agent launched" in str(subagent.output).lower()
    assert not [e for e in result.events if e.type == "action.called" and e.name == "Agent"]
