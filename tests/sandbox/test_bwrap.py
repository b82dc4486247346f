"""The bubblewrap sandbox isolates: the system is read-only, the host's files are not there, the network is closed
except the allowed endpoints, and nothing a command started outlives it."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from niceeval.sandbox import BwrapSandbox, CommandResult, ProcessLimits, SandboxUnavailableError, bwrap_problem
from niceeval.testing import LLMServer

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def fixture(tmp_path: Path) -> Path:
    folder = tmp_path / "fixture"
    folder.mkdir()
    (folder / "app.py").write_text("VALUE = 1\n")
    return folder


@pytest.fixture
async def sandbox(fixture: Path) -> AsyncIterator[BwrapSandbox]:
    problem = bwrap_problem()
    if problem is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true but {problem}", pytrace=False)
        pytest.skip(problem)
    recorded: list[CommandResult] = []
    async with await BwrapSandbox.create(fixture, on_command=recorded.append) as created:
        yield created


def python(code: str) -> str:
    return f"{sys.executable} -c '{code}'"


async def test_the_workspace_is_writable_and_the_diff_sees_it(sandbox: BwrapSandbox) -> None:
    result = await sandbox.run_shell("echo 'VALUE = 2' > app.py && echo done > new.txt && cat app.py")
    assert (result.exit_code, result.stdout) == (0, "VALUE = 2\n")
    diff = await sandbox.diff()
    assert (diff.modified, diff.added) == (["app.py"], ["new.txt"])


async def test_a_write_outside_the_workspace_fails_and_is_recorded_as_failed(
    sandbox: BwrapSandbox, tmp_path: Path
) -> None:
    outside = tmp_path / "escaped.txt"
    for target in ("/etc/niceeval-escape", str(outside), "/escape.txt"):
        result = await sandbox.run_shell(f"echo x > {target}")
        assert result.status == "failed" and result.exit_code not in (0, None), target
        assert re.search("Read-only file system|No such file|nonexistent", result.stderr), result.stderr
    assert not outside.exists() and not Path("/etc/niceeval-escape").exists()
    event = sandbox.commands[-1].to_action_event()
    assert (event.kind, event.status) == ("shell", "failed")


async def test_the_hosts_files_are_not_there(sandbox: BwrapSandbox, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("hunter2")
    result = await sandbox.run_shell(f"cat {secret}")
    assert result.exit_code != 0 and "hunter2" not in result.stdout
    project = Path(__file__).resolve().parents[2] / "pyproject.toml"  # the project beside niceeval's own venv
    assert (await sandbox.run_shell(f"test -e {project}")).exit_code == 1


async def test_only_allowed_endpoints_are_reachable(sandbox: BwrapSandbox) -> None:
    connect = 'import socket,sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5); print("up")'
    with LLMServer() as allowed, LLMServer() as other:
        sandbox.allow_network(f"127.0.0.1:{allowed.port}")
        reached = await sandbox.run_command(sys.executable, ["-c", connect, str(allowed.port)])
        blocked = await sandbox.run_command(sys.executable, ["-c", connect, str(other.port)])
        outside = await sandbox.run_command(sys.executable, ["-c", connect.replace("127.0.0.1", "10.255.255.1"), "80"])
    assert (reached.exit_code, reached.stdout) == (0, "up\n")
    assert blocked.status == "failed" and "Connection refused" in blocked.stderr
    assert outside.status == "failed" and "Connection refused" in outside.stderr  # routed to loopback, recorded


async def test_an_allowed_endpoint_answers_http_through_the_sandbox(sandbox: BwrapSandbox) -> None:
    with LLMServer(["hi from the model"]) as server:
        sandbox.allow_network(f"127.0.0.1:{server.port}")
        fetch = (
            f'import json,urllib.request as u; r=u.Request("{server.base_url}/chat/completions", data=json.dumps('
            '{"model":"m","messages":[{"role":"user","content":"hi"}]}).encode(), '
            'headers={"content-type":"application/json"}); '
            'print(json.load(u.urlopen(r))["choices"][0]["message"]["content"])'
        )
        result = await sandbox.run_command(sys.executable, ["-c", fetch])
    assert (result.exit_code, result.stdout.strip()) == (0, "hi from the model"), result.stderr


async def test_what_a_command_started_dies_with_it(sandbox: BwrapSandbox, tmp_path: Path) -> None:
    result = await sandbox.run_shell("(sleep 2; echo late > late.txt) & echo started", timeout=10)
    assert result.stdout == "started\n"
    await __import__("anyio").sleep(3)
    assert not (sandbox.path / "late.txt").exists()


async def test_a_command_that_cannot_start_is_exit_127(sandbox: BwrapSandbox) -> None:
    result = await sandbox.run_command("no-such-program-anywhere")
    assert result.exit_code == 127 and "no-such-program-anywhere" in result.stderr


async def test_a_remote_endpoint_cannot_be_allowed(sandbox: BwrapSandbox) -> None:
    with pytest.raises(SandboxUnavailableError, match="loopback endpoints only"):
        sandbox.allow_network("api.openai.com:443")


async def test_a_missing_bwrap_says_how_to_install_it(fixture: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(fixture))
    bwrap_problem.cache_clear()
    try:
        with pytest.raises(SandboxUnavailableError, match="apt-get install bubblewrap.*sandbox='local'"):
            await BwrapSandbox.create(fixture)
    finally:
        monkeypatch.undo()
        bwrap_problem.cache_clear()


@pytest.mark.parametrize("forwarding", [False, True], ids=["prlimit", "relay"])
async def test_the_file_size_limit_applies(sandbox: BwrapSandbox, forwarding: bool) -> None:
    sandbox.set_limits(ProcessLimits(file_size=1000))
    with LLMServer() as server:
        if forwarding:  # the limits are set by the relay when there are endpoints to forward, else by prlimit
            sandbox.allow_network(f"127.0.0.1:{server.port}")
        small = await sandbox.run_shell("head -c 500 /dev/zero > small.bin")
        big = await sandbox.run_shell("head -c 5000 /dev/zero > big.bin")
    assert small.exit_code == 0
    assert big.status == "failed" and (sandbox.path / "big.bin").stat().st_size <= 1000
