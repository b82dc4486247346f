"""run_command / run_shell: exit codes, timeouts, output caps, scrubbed environment, cwd, records."""

from __future__ import annotations

import os
import time
from pathlib import Path

import anyio
import pytest

from niceeval.sandbox import CommandResult, LocalSandbox, SandboxPathError

pytestmark = pytest.mark.anyio


def _is_running(pid: int) -> bool:
    """True if `pid` is alive; a zombie (dead, not yet reaped by init) counts as gone."""
    stat = Path(f"/proc/{pid}/stat")
    if stat.parent.parent.is_dir():
        try:
            return stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"
        except FileNotFoundError:
            return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def _wait_until_gone(pid: int) -> bool:
    with anyio.move_on_after(3):
        while _is_running(pid):
            await anyio.sleep(0.02)
        return True
    return False


async def test_successful_command_has_exit_code_zero_and_its_stdout(sandbox: LocalSandbox) -> None:
    result = await sandbox.run_command("echo", ["hello", "world"])
    assert (result.exit_code, result.stdout, result.status) == (0, "hello world\n", "success")
    assert result.command == "echo hello world"


async def test_failing_command_reports_its_exit_code_and_stderr(sandbox: LocalSandbox) -> None:
    result = await sandbox.run_shell("echo broken >&2; exit 3")
    assert (result.exit_code, result.stderr, result.status) == (3, "broken\n", "failed")
    assert result.error == "exited with status 3"


async def test_timeout_kills_the_command_and_marks_it_timed_out(sandbox: LocalSandbox) -> None:
    started = time.monotonic()
    result = await sandbox.run_command("sleep", ["30"], timeout=0.5)
    assert time.monotonic() - started < 5
    assert (result.timed_out, result.exit_code, result.status) == (True, None, "failed")
    assert result.error == "timed out after 0.5s"


async def test_timeout_kills_the_whole_process_group(sandbox: LocalSandbox) -> None:
    await sandbox.run_shell("sleep 30 & echo $! > child.pid; wait", timeout=0.5)
    child = int(await sandbox.read_text("child.pid"))
    assert await _wait_until_gone(child)


async def test_background_job_does_not_outlive_its_command(sandbox: LocalSandbox) -> None:
    result = await sandbox.run_shell("sleep 30 > /dev/null 2>&1 & echo $! > child.pid")
    assert result.exit_code == 0
    assert await _wait_until_gone(int(await sandbox.read_text("child.pid")))


async def test_cancelled_command_is_killed(sandbox: LocalSandbox) -> None:
    with anyio.move_on_after(0.5):
        await sandbox.run_shell("sleep 30 & echo $! > child.pid; wait")
    assert await _wait_until_gone(int(await sandbox.read_text("child.pid")))


async def test_output_beyond_the_cap_is_truncated_with_a_marker(
    fixture_dir: Path, tmp_path: Path, anyio_backend: str
) -> None:
    async with await LocalSandbox.create(fixture_dir, max_output_bytes=1000, temp_dir=tmp_path) as sandbox:
        result = await sandbox.run_shell("head -c 5000 /dev/zero | tr '\\0' x")
    assert result.stdout_truncated
    assert result.stdout == "x" * 1000 + "\n[niceeval: output truncated: kept 1000 of 5000 bytes]\n"


async def test_output_capped_across_a_secret_shows_no_piece_of_it(
    fixture_dir: Path, tmp_path: Path, anyio_backend: str
) -> None:
    """The cap keeps a margin past it: a secret the cap cuts is still whole when the output is scrubbed."""
    secret = "sk-proj-Zq8vN2xLmK4pR7tY1wE3uI9oAplanted"
    async with await LocalSandbox.create(fixture_dir, max_output_bytes=1000, temp_dir=tmp_path) as sandbox:
        for before in (980, 990, 995, 999):
            result = await sandbox.run_shell(f"printf '%{before}s key {secret} then more' x")
            total = before + len(f" key {secret} then more")
            assert result.stdout.endswith(f"\n[niceeval: output truncated: kept 1000 of {total} bytes]\n")
            pieces = {secret[i : i + 8] for i in range(len(secret) - 7)}
            assert [piece for piece in pieces if piece in result.stdout] == [], before


async def test_parent_secrets_do_not_reach_the_command(sandbox: LocalSandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-parent-secret")
    result = await sandbox.run_shell('echo "${OPENAI_API_KEY-unset}"')
    assert result.stdout == "unset\n"


async def test_explicit_env_reaches_the_command(sandbox: LocalSandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-parent-secret")
    result = await sandbox.run_shell('echo "$OPENAI_API_KEY"', env={"OPENAI_API_KEY": "sk-given"})
    assert result.stdout == "sk-given\n"


async def test_sandbox_env_reaches_every_command(fixture_dir: Path, tmp_path: Path, anyio_backend: str) -> None:
    async with await LocalSandbox.create(fixture_dir, env={"MODE": "eval"}, temp_dir=tmp_path) as sandbox:
        assert (await sandbox.run_shell('echo "$MODE"')).stdout == "eval\n"


async def test_home_is_a_private_directory_outside_the_workspace(sandbox: LocalSandbox) -> None:
    home = Path((await sandbox.run_shell('echo "$HOME"')).stdout.strip())
    assert home != Path.home()
    assert home.parent == sandbox.path.parent


async def test_relative_cwd_resolves_inside_the_workspace(sandbox: LocalSandbox) -> None:
    result = await sandbox.run_command("pwd", cwd="src")
    assert (Path(result.stdout.strip()), result.cwd) == (sandbox.path / "src", "src")


async def test_cwd_escaping_the_workspace_is_refused(sandbox: LocalSandbox) -> None:
    with pytest.raises(SandboxPathError, match="outside the sandbox workspace"):
        await sandbox.run_command("pwd", cwd="../..")


async def test_cwd_that_is_not_a_directory_is_refused(sandbox: LocalSandbox) -> None:
    with pytest.raises(SandboxPathError, match="is not a directory"):
        await sandbox.run_command("pwd", cwd="README.md")


async def test_missing_program_is_a_failed_result_with_status_127(sandbox: LocalSandbox) -> None:
    result = await sandbox.run_command("no-such-program-niceeval")
    assert (result.exit_code, result.status) == (127, "failed")
    assert "cannot run 'no-such-program-niceeval'" in result.stderr


async def test_string_args_are_refused_with_a_hint(sandbox: LocalSandbox) -> None:
    with pytest.raises(TypeError, match=r"write run_command\('ls', \['-la'\]\)"):
        await sandbox.run_command("ls", "-la")


async def test_commands_are_recorded_and_reported_as_they_finish(
    fixture_dir: Path, tmp_path: Path, anyio_backend: str
) -> None:
    reported: list[CommandResult] = []
    async with await LocalSandbox.create(fixture_dir, on_command=reported.append, temp_dir=tmp_path) as sandbox:
        first = await sandbox.run_command("true")
        second = await sandbox.run_shell("exit 1")
        assert sandbox.commands == (first, second)
    assert reported == [first, second]


async def test_unrecorded_commands_are_not_listed(sandbox: LocalSandbox) -> None:
    await sandbox.run_command("true", record=False)
    assert sandbox.commands == ()


async def test_command_result_maps_to_a_shell_action_event(sandbox: LocalSandbox) -> None:
    event = (await sandbox.run_command("ls", ["nope"])).to_action_event()
    assert (event.type, event.kind, event.name, event.status) == ("action.called", "shell", "ls", "failed")
    assert event.input == {"command": "ls nope", "args": ["nope"], "cwd": "."}
    assert event.exit_code == 2
    assert "nope" in event.output["stderr"]
