"""An isolating sandbox records every attempt to reach an address outside it (TCP connect, UDP send, DNS query;
IPv4 and IPv6), in bwrap and Docker alike: the command fails as before, the record names address, port and
protocol, and the allowed endpoints still answer."""

from __future__ import annotations

import os
import socket
import sys
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import anyio
import pytest
from docker_helpers import BASE_IMAGE, needs_docker

import niceeval.sandbox
from niceeval import EvalContext, define_eval
from niceeval._core.events import ActionCalledEvent, ConnectionAttemptEvent
from niceeval._run.discovery import EvalEntry
from niceeval._run.execute import ExecOptions, execute
from niceeval.sandbox import (
    BwrapSandbox,
    ConnectionAttempt,
    DockerSandbox,
    LaunchOptions,
    LocalSandbox,
    bwrap_problem,
    close_reused,
    docker_sandbox,
    network_watch_problem,
    prepare_docker_run,
)
from niceeval.sandbox._bwrap_net import NetworkHolder, NetworkHolderError
from niceeval.sandbox._network import MAX_ATTEMPTS, AttemptRecorder, parse_attempt
from niceeval.testing import LLMServer

pytestmark = pytest.mark.anyio

SHIM = Path(niceeval.sandbox.__file__).with_name("_netshim.py")

TCP = "import socket,sys; socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5); print('up')"
UDP = "import socket,sys; socket.socket(socket.AF_INET6 if ':' in sys.argv[1] else socket.AF_INET, socket.SOCK_DGRAM)"
UDP += ".sendto(b'x', (sys.argv[1], int(sys.argv[2]))); print('sent')"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def fixture(tmp_path: Path) -> Path:
    folder = tmp_path / "fixture"
    folder.mkdir()
    (folder / "app.py").write_text("VALUE = 1\n")
    return folder


def _needs_bwrap_watch() -> None:
    problem = bwrap_problem() or network_watch_problem()
    if problem is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true but {problem}", pytrace=False)
        pytest.skip(problem)


@pytest.fixture(params=["bwrap", "docker"])
async def sandbox(request: pytest.FixtureRequest, fixture: Path) -> AsyncIterator[LocalSandbox]:
    seen: list[ConnectionAttempt] = []
    if request.param == "bwrap":
        _needs_bwrap_watch()
        opened: LocalSandbox = await BwrapSandbox.create(fixture, on_attempt=seen.append)
    else:
        needs_docker()
        environment = docker_sandbox(image=BASE_IMAGE)
        run = await prepare_docker_run(
            environment, bases=(fixture.parent,), eval_id=f"tests::{uuid.uuid4()}", attempt=0
        )
        opened = await DockerSandbox.create(fixture, run=run, on_attempt=seen.append)
    opened.seen = seen  # type: ignore[attr-defined]
    async with opened:
        yield opened


async def test_a_tcp_connect_outside_fails_fast_and_is_recorded(sandbox: LocalSandbox) -> None:
    before = datetime.now(UTC)
    result = await sandbox.run_command("python3", ["-c", TCP, "203.0.113.7", "443"])
    assert result.status == "failed" and "Connection refused" in result.stderr
    assert result.duration is not None and result.duration < 5
    [attempt] = sandbox.connection_attempts
    assert (attempt.protocol, attempt.address, attempt.port, attempt.lookup) == ("tcp", "203.0.113.7", 443, None)
    assert attempt.target == "203.0.113.7:443" and before <= attempt.at <= datetime.now(UTC)
    assert sandbox.seen == [attempt]  # type: ignore[attr-defined]
    event = attempt.to_event()
    assert (event.type, event.protocol, event.address, event.port) == ("connection.attempt", "tcp", "203.0.113.7", 443)


async def test_udp_and_ipv6_attempts_are_recorded(sandbox: LocalSandbox) -> None:
    sent = await sandbox.run_command("python3", ["-c", UDP, "198.51.100.9", "5353"])
    six = await sandbox.run_command("python3", ["-c", TCP, "2001:db8::7", "8443"])
    sent6 = await sandbox.run_command("python3", ["-c", UDP, "2001:db8::9", "9999"])
    assert (sent.exit_code, sent.stdout) == (0, "sent\n")  # a datagram goes nowhere, as before: no error
    assert six.status == "failed" and "Connection refused" in six.stderr
    assert sent6.exit_code == 0
    recorded = [(a.protocol, a.address, a.port) for a in sandbox.connection_attempts]
    assert recorded == [("udp", "198.51.100.9", 5353), ("tcp", "2001:db8::7", 8443), ("udp", "2001:db8::9", 9999)]
    assert sandbox.connection_attempts[1].target == "[2001:db8::7]:8443"


async def test_a_dns_query_is_recorded_with_the_name_it_asks_for(sandbox: LocalSandbox) -> None:
    query = (
        "import socket,struct; q=struct.pack('>HHHHHH',1,256,1,0,0,0)+b'\\x05exfil\\x07invalid\\x00';"
        "q+=struct.pack('>HH',1,1);"
        "socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(q, ('192.0.2.53', 53))"
    )
    await sandbox.run_command("python3", ["-c", query])
    [attempt] = sandbox.connection_attempts
    assert (attempt.protocol, attempt.address, attempt.port, attempt.lookup) == (
        "udp",
        "192.0.2.53",
        53,
        "exfil.invalid",
    )


async def test_loopback_and_allowed_endpoints_are_not_attempts_and_still_answer(sandbox: LocalSandbox) -> None:
    with LLMServer() as allowed:
        sandbox.allow_network(f"127.0.0.1:{allowed.port}")  # type: ignore[attr-defined]
        reached = await sandbox.run_command("python3", ["-c", TCP, "127.0.0.1", str(allowed.port)])
        closed = await sandbox.run_command("python3", ["-c", TCP, "127.0.0.1", "9"])
    assert (reached.exit_code, reached.stdout) == (0, "up\n"), reached.stderr
    assert closed.status == "failed" and "Connection refused" in closed.stderr
    assert sandbox.connection_attempts == ()


async def test_many_attempts_in_one_command_are_recorded_in_order(sandbox: LocalSandbox) -> None:
    script = (
        "import socket\nfor port in range(1000, 1005):\n"
        "    try: socket.create_connection(('203.0.113.8', port), timeout=5)\n    except OSError: pass\n"
    )
    await sandbox.run_shell(f'python3 -c "{script}"')
    assert [a.port for a in sandbox.connection_attempts] == [1000, 1001, 1002, 1003, 1004]


async def test_a_local_sandbox_watches_nothing(fixture: Path) -> None:
    async with await LocalSandbox.create(fixture) as sandbox:
        await sandbox.run_command(sys.executable, ["-c", "print(1)"])
        assert sandbox.connection_attempts == () and await sandbox.collect_connection_attempts() == ()


def test_hostile_report_lines_are_dropped() -> None:
    good = b'{"at": 1.5, "protocol": "tcp", "address": "203.0.113.7", "port": 443}'
    assert parse_attempt(good) == ConnectionAttempt(
        at=datetime.fromtimestamp(1.5, UTC), protocol="tcp", address="203.0.113.7", port=443
    )
    for bad in (
        b"not json",
        b'{"at": 1, "protocol": "icmp", "address": "203.0.113.7", "port": 1}',
        b'{"at": 1, "protocol": "tcp", "address": "evil; rm -rf /", "port": 1}',
        b'{"at": 1, "protocol": "tcp", "address": "203.0.113.7", "port": 70000}',
        b'{"at": 1, "protocol": "tcp", "address": "203.0.113.7", "port": true}',
        b'{"at": "soon", "protocol": "tcp", "address": "203.0.113.7", "port": 1}',
        b'{"at": 1, "protocol": "udp", "address": "203.0.113.7", "port": 53, "lookup": "' + b"a" * 300 + b'"}',
        b"[1, 2]",
    ):
        assert parse_attempt(bad) is None, bad


def test_the_recorder_reads_lines_split_across_writes(tmp_path: Path) -> None:
    recorder = AttemptRecorder(tmp_path / "net" / "watch.sock")
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as writer:
            writer.connect(str(recorder.path))
            writer.sendall(b'{"at": 2, "protocol": "udp", "address": "2001:db8::1", "po')
            assert recorder.take() == []
            writer.sendall(b'rt": 9}\ngarbage\n')
        [attempt] = recorder.take()
        assert (attempt.address, attempt.port, attempt.protocol) == ("2001:db8::1", 9, "udp")
    finally:
        recorder.close()
    assert not recorder.path.exists()


def test_an_eval_records_each_attempt_as_an_event_before_its_command(tmp_path: Path) -> None:
    _needs_bwrap_watch()
    (tmp_path / "fixtures" / "app").mkdir(parents=True)
    launched_script = (
        "import socket\ntry: socket.create_connection(('198.51.100.4', 25), timeout=5)\nexcept OSError: pass"
    )

    @define_eval(fixture="fixtures/app", sandbox="bwrap")
    async def reaches_out(t: EvalContext) -> None:
        await t.sandbox.run_command("python3", ["-c", TCP, "203.0.113.7", "443"])
        launch = await t.sandbox.launch(["python3", "-c", launched_script], LaunchOptions())
        await anyio.run_process(list(launch.argv), env=dict(launch.env), cwd=launch.cwd, check=False)

    entry = EvalEntry(id="x.py::reaches_out", spec=reaches_out)
    result = anyio.run(execute, entry, 0, ExecOptions(timeout=120, root=tmp_path))
    assert result.error is None, result.error
    kinds = [
        (e.type, e.address, e.port) if isinstance(e, ConnectionAttemptEvent) else (e.type,)
        for e in result.events
        if isinstance(e, ConnectionAttemptEvent | ActionCalledEvent)
    ]
    assert kinds == [
        ("connection.attempt", "203.0.113.7", 443),
        ("action.called",),
        ("connection.attempt", "198.51.100.4", 25),
    ]


def test_a_flood_of_attempts_is_read_but_only_the_first_thousand_kept(tmp_path: Path) -> None:
    recorder = AttemptRecorder(tmp_path / "net" / "watch.sock")
    line = b'{"at": %d, "protocol": "udp", "address": "198.51.100.1", "port": 9}\n'
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as writer:
            writer.connect(str(recorder.path))
            writer.sendall(b"".join(line % n for n in range(MAX_ATTEMPTS - 1)))
            assert len(recorder.take()) == MAX_ATTEMPTS - 1
            writer.sendall(b"".join(line % n for n in range(6)))
        assert [attempt.at.timestamp() for attempt in recorder.take()] == [0.0]
        assert (recorder.take(), recorder.dropped) == ([], 5)
    finally:
        recorder.close()


async def test_the_bwrap_network_helper_reports_what_it_cannot_do(tmp_path: Path) -> None:
    _needs_bwrap_watch()
    missing = tmp_path / "no-such-shim.py"
    with pytest.raises(NetworkHolderError, match="network namespace did not come up: .*no-such-shim.py"):
        await NetworkHolder.start(tmp_path / "net", tmp_path / "net" / "watch.sock", missing)
    holder = await NetworkHolder.start(tmp_path / "net", tmp_path / "net" / "watch.sock", SHIM)
    try:
        with pytest.raises(NetworkHolderError, match="could not forward 127.0.0.1:99999: error"):
            await holder.forward("127.0.0.1:99999", tmp_path / "net" / "0.sock")
        await holder.forward("127.0.0.1:8808", tmp_path / "net" / "0.sock")  # the helper still serves
    finally:
        await holder.stop()


async def test_a_launched_process_attempts_are_recorded_when_collected(sandbox: LocalSandbox) -> None:
    launch = await sandbox.launch(["python3", "-c", TCP, "203.0.113.9", "80"], LaunchOptions())
    done = await anyio.run_process(list(launch.argv), env=dict(launch.env), cwd=launch.cwd, check=False)
    assert done.returncode != 0 and b"Connection refused" in done.stderr
    assert [a.target for a in await sandbox.collect_connection_attempts()] == ["203.0.113.9:80"]
    assert [a.target for a in sandbox.connection_attempts] == ["203.0.113.9:80"]
    assert [a.target for a in sandbox.seen] == ["203.0.113.9:80"]  # type: ignore[attr-defined]


async def test_a_reused_docker_pod_records_each_attempts_own(fixture: Path) -> None:
    needs_docker()
    environment = docker_sandbox(image=BASE_IMAGE, reuse=True)
    run = await prepare_docker_run(environment, bases=(fixture.parent,), eval_id=f"tests::{uuid.uuid4()}", attempt=0)
    try:
        first = await DockerSandbox.create(fixture, run=run)
        await first.run_command("python3", ["-c", TCP, "203.0.113.1", "1"])
        await first.close()
        second = await DockerSandbox.create(fixture, run=run)
        assert second.container == first.container
        await second.run_command("python3", ["-c", TCP, "203.0.113.2", "2"])
        await second.close()
    finally:
        await close_reused()
    assert [a.target for a in first.connection_attempts] == ["203.0.113.1:1"]
    assert [a.target for a in second.connection_attempts] == ["203.0.113.2:2"]
