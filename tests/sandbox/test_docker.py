"""The Docker sandbox isolates as the bubblewrap one does, in one container per run: the system is read-only, the
host's files are not there, the network is closed but for the allowed endpoints and the services beside it, and
nothing a command started outlives it."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest
from docker_helpers import BASE_IMAGE, containers, eval_label, needs_docker, open_docker

from niceeval.sandbox import DockerSandbox, DockerSandboxError, LaunchOptions, docker_sandbox, service
from niceeval.testing import LLMServer

pytestmark = pytest.mark.anyio

CONNECT = 'import socket,sys; socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5); print("up")'
PROCESSES = "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline; echo; done"


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
async def sandbox(fixture: Path) -> AsyncIterator[DockerSandbox]:
    needs_docker()
    async with await open_docker(fixture) as created:
        yield created


async def test_commands_run_in_one_container_at_the_workspace_path(sandbox: DockerSandbox) -> None:
    first = await sandbox.run_shell("pwd; cat app.py; echo 'VALUE = 2' > app.py; echo new > new.txt")
    second = await sandbox.run_shell("cat /proc/1/cmdline | tr '\\0' ' '; cat new.txt")
    assert (first.exit_code, first.stdout) == (0, f"{sandbox.path}\nVALUE = 1\n")
    assert second.stdout == "/sbin/docker-init -- sleep infinity new\n"
    assert sandbox.watcher is not None
    assert sorted(containers(eval_label(sandbox))) == sorted([sandbox.container[:12], sandbox.watcher[:12]])
    diff = await sandbox.diff()
    assert (diff.modified, diff.added) == (["app.py"], ["new.txt"])
    assert [c.command for c in sandbox.commands][0].startswith("pwd")


async def test_a_write_outside_the_workspace_fails_and_is_recorded_as_failed(
    sandbox: DockerSandbox, tmp_path: Path
) -> None:
    outside = tmp_path / "escaped.txt"
    for target in ("/etc/niceeval-escape", str(outside), "/escape.txt"):
        result = await sandbox.run_shell(f"echo x > {target}")
        assert result.status == "failed" and result.exit_code not in (0, None), target
        assert re.search("Read-only file system|No such file|nonexistent", result.stderr), result.stderr
    assert not outside.exists() and not Path("/etc/niceeval-escape").exists()
    event = sandbox.commands[-1].to_action_event()
    assert (event.kind, event.status) == ("shell", "failed")


async def test_the_hosts_files_are_not_there(sandbox: DockerSandbox, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("hunter2")
    result = await sandbox.run_shell(f"cat {secret}")
    assert result.exit_code != 0 and "hunter2" not in result.stdout


async def test_only_allowed_endpoints_of_the_host_are_reachable(sandbox: DockerSandbox) -> None:
    with LLMServer() as allowed, LLMServer() as other:
        sandbox.allow_network(f"127.0.0.1:{allowed.port}")
        reached = await sandbox.run_command("python3", ["-c", CONNECT, "127.0.0.1", str(allowed.port)])
        blocked = await sandbox.run_command("python3", ["-c", CONNECT, "127.0.0.1", str(other.port)])
        outside = await sandbox.run_command("python3", ["-c", CONNECT, "10.255.255.1", "80"])
    assert (reached.exit_code, reached.stdout) == (0, "up\n"), reached.stderr
    assert blocked.status == "failed" and "Connection refused" in blocked.stderr
    assert outside.status == "failed" and "Connection refused" in outside.stderr  # routed to loopback, recorded


async def test_a_launched_process_reaches_its_model_endpoint(sandbox: DockerSandbox) -> None:
    with LLMServer(["hi from the model"]) as server:
        fetch = (
            f'import json,urllib.request as u; r=u.Request("{server.base_url}/chat/completions", data=json.dumps('
            '{"model":"m","messages":[{"role":"user","content":"hi"}]}).encode(), '
            'headers={"content-type":"application/json"}); '
            'print(json.load(u.urlopen(r))["choices"][0]["message"]["content"])'
        )
        options = LaunchOptions(allow_network=(f"127.0.0.1:{server.port}",), env={"GREETING": "hello"})
        launch = await sandbox.launch(["sh", "-c", f"echo $GREETING; python3 -c '{fetch}'"], options)
        done = await anyio.run_process(list(launch.argv), env=dict(launch.env), cwd=launch.cwd, check=False)
    assert (done.returncode, done.stdout.decode()) == (0, "hello\nhi from the model\n"), done.stderr


async def test_what_a_command_started_dies_with_it(sandbox: DockerSandbox) -> None:
    result = await sandbox.run_shell("(sleep 2; echo late > late.txt) & setsid sleep 300 & echo started", timeout=10)
    assert result.stdout == "started\n"
    await anyio.sleep(3)
    left = await sandbox.run_shell(PROCESSES)
    assert not (sandbox.path / "late.txt").exists()
    assert "sleep 300" not in left.stdout and "sleep 2" not in left.stdout


async def test_a_timed_out_command_is_killed_inside_the_container(sandbox: DockerSandbox) -> None:
    result = await sandbox.run_shell("sleep 300 & sleep 301", timeout=1)
    assert result.timed_out and result.exit_code is None
    with anyio.fail_after(10):
        while "sleep 30" in (await sandbox.run_shell(PROCESSES)).stdout:
            await anyio.sleep(0.1)


async def test_a_command_that_cannot_start_is_exit_127(sandbox: DockerSandbox) -> None:
    result = await sandbox.run_command("no-such-program-anywhere")
    assert result.exit_code == 127 and "no-such-program-anywhere" in result.stderr


async def test_the_file_size_limit_applies(fixture: Path) -> None:
    needs_docker()
    from niceeval.sandbox import ContainerLimits

    environment = docker_sandbox(image=BASE_IMAGE, limits=ContainerLimits(file_size=1000))
    async with await open_docker(fixture, environment) as sandbox:
        small = await sandbox.run_shell("head -c 500 /dev/zero > small.bin")
        big = await sandbox.run_shell("head -c 5000 /dev/zero > big.bin")
    assert small.exit_code == 0
    assert big.status == "failed"


async def test_a_path_the_container_cannot_see_is_refused_with_the_fix(sandbox: DockerSandbox, tmp_path: Path) -> None:
    with pytest.raises(
        DockerSandboxError, match=f"{tmp_path} must be read in the Docker sandbox's container.*read_only"
    ):
        await sandbox.launch(["true"], LaunchOptions(read_only=(tmp_path,)))
    with pytest.raises(DockerSandboxError, match=f"{tmp_path} must be written in the Docker sandbox's container"):
        await sandbox.launch(["true"], LaunchOptions(writable=(tmp_path,)))


async def test_declared_read_only_folders_are_readable_but_not_writable(fixture: Path, tmp_path: Path) -> None:
    needs_docker()
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "tool.sh").write_text("echo tool ran\n")
    environment = docker_sandbox(image=BASE_IMAGE, read_only=[tools])
    async with await open_docker(fixture, environment) as sandbox:
        ran = await sandbox.run_command("sh", [str(tools / "tool.sh")])
        wrote = await sandbox.run_shell(f"echo x > {tools}/new.txt")
        launch = await sandbox.launch(["true"], LaunchOptions(read_only=(tools,)))
    assert (ran.exit_code, ran.stdout) == (0, "tool ran\n")
    assert wrote.exit_code != 0 and "Read-only file system" in wrote.stderr and not (tools / "new.txt").exists()
    assert launch.argv[-1] == "true"


async def test_closing_removes_the_containers_and_keeping_leaves_them(fixture: Path) -> None:
    needs_docker()
    removed = await open_docker(fixture)
    await removed.close()
    assert containers(eval_label(removed)) == []
    kept = await open_docker(fixture)
    try:
        assert await kept.close(keep=True) == kept.path
        assert kept.watcher is not None
        assert sorted(containers(eval_label(kept))) == sorted([kept.container[:12], kept.watcher[:12]])
    finally:
        await anyio.run_process(["docker", "rm", "--force", kept.container, kept.watcher or kept.container])


async def test_services_are_reachable_on_loopback_from_the_workspace(fixture: Path) -> None:
    needs_docker()
    web = service(
        "web",
        image=BASE_IMAGE,
        command=["sh", "-c", "echo $GREETING > index.html && exec python3 -m http.server 8000 --bind 127.0.0.1"],
        env={"GREETING": "hello from the service"},
        ready="python3 -c 'import urllib.request as u; u.urlopen(\"http://127.0.0.1:8000/\")'",
    )
    get = "import urllib.request as u; print(u.urlopen('http://127.0.0.1:8000/index.html').read().decode(), end='')"
    async with await open_docker(fixture, docker_sandbox(image=BASE_IMAGE, services=[web])) as sandbox:
        result = await sandbox.run_command("python3", ["-c", get])
        assert (result.exit_code, result.stdout) == (0, "hello from the service\n"), result.stderr
        assert set(sandbox.services) == {"web"}
        pod = containers(eval_label(sandbox))
        assert sandbox.watcher is not None
        pod_ids = (sandbox.container, sandbox.services["web"], sandbox.watcher)
        assert sorted(pod) == sorted(c[:12] for c in pod_ids)
    assert containers(eval_label(sandbox)) == []
