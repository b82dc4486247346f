"""Benchmark (run by hand): what isolation costs. One command, and one coding-agent message, local vs bwrap.

Per command: `true` run N times through `LocalSandbox` and `BwrapSandbox` (median and p95 wall time).
Per message: one Claude Code and one Codex message (a shell tool call, then a final answer, against the local
scripted server) through the eval's sandbox, median wall time of N messages each way. The CLIs come from
`.tools/npm` (scripts/coding-clis.sh) or PATH.

    python bench/coding_sandbox.py [--commands 50] [--messages 5]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import anyio

from niceeval._core.events import EventLog
from niceeval._core.sandbox_kinds import CURRENT_SANDBOX
from niceeval.agents import CodingAgentOptions, claude_code_agent, codex_agent
from niceeval.agents._protocol import WORKSPACE
from niceeval.sandbox import BwrapSandbox, LocalSandbox
from niceeval.testing import LLMRequest, LLMServer, Reply, ToolCall

TOOLS = Path(__file__).resolve().parent.parent / ".tools" / "npm" / "node_modules" / ".bin"


def script(request: LLMRequest) -> Reply:
    if any(m.role == "tool" for m in request.messages):
        return Reply(text="done")
    if request.provider == "anthropic":
        return Reply(tool_calls=[ToolCall(name="Bash", arguments={"command": "echo hi > out.txt"})])
    return Reply(tool_calls=[ToolCall(name="exec_command", arguments={"cmd": "echo hi > out.txt"})])


def summary(times: list[float]) -> str:
    ordered = sorted(times)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return f"median {statistics.median(ordered) * 1000:7.1f} ms   p95 {p95 * 1000:7.1f} ms"


async def commands(fixture: Path, n: int) -> None:
    for cls in (LocalSandbox, BwrapSandbox):
        async with await cls.create(fixture) as sandbox:
            times = []
            for _ in range(n):
                started = time.perf_counter()
                await sandbox.run_command("true")
                times.append(time.perf_counter() - started)
        print(f"one command   {cls.__name__:13} {summary(times)}")


async def messages(fixture: Path, n: int) -> None:
    with LLMServer(script) as server:
        for name, make, url in (
            ("claude", claude_code_agent, server.url),
            ("codex", codex_agent, server.base_url),
        ):
            options = CodingAgentOptions(executable=TOOLS / name, base_url=url, api_key="bench", model="m")
            for cls in (LocalSandbox, BwrapSandbox):
                times = []
                for i in range(n):
                    async with await cls.create(fixture) as sandbox:
                        token, current = WORKSPACE.set(sandbox.path), CURRENT_SANDBOX.set(sandbox)
                        try:
                            session = await make(options).open(f"bench#{i}", EventLog())
                            started = time.perf_counter()
                            await session.send("write out.txt")
                            times.append(time.perf_counter() - started)
                        finally:
                            WORKSPACE.reset(token)
                            CURRENT_SANDBOX.reset(current)
                print(f"one message   {name:6} {cls.__name__:13} {summary(times)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--commands", type=int, default=50)
    parser.add_argument("--messages", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        fixture = Path(folder) / "fixture"
        fixture.mkdir()
        (fixture / "app.py").write_text("VALUE = 1\n")
        anyio.run(commands, fixture, args.commands)
        anyio.run(messages, fixture, args.messages)


if __name__ == "__main__":
    main()
