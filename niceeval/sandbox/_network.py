"""The connection attempts an isolating sandbox refused: reported from inside by `_netshim.py --watch`, read here.

Inside, the watcher writes one JSON line per attempt (a TCP connect, a UDP datagram, a DNS query) to a Unix socket
of the sandbox's folder. `AttemptRecorder` listens on it and reads without blocking when asked (`take`): after each
command (its watcher has written and closed before the command's process ended) and at the end of a run. A line
comes from inside the sandbox, so it is untrusted: one that is not a well-formed attempt is dropped.
"""

from __future__ import annotations

import ipaddress
import json
import socket
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import anyio

from niceeval._core.events import ConnectionAttemptEvent

WATCH_SOCKET = "watch.sock"
"""The recorder's socket, in the sandbox folder's `net/` (beside the endpoints' sockets)."""
WATCH_CONTROL = "watch-control.sock"
"""A Docker pod's watcher's control socket, beside it."""
MAX_ATTEMPTS = 1000
"""Attempts one sandbox keeps at most: a flood of datagrams is read, not recorded one by one."""
_MAX_LINE = 4096
_SETTLE_S = 10.0
_MAX_NAME = 255


@dataclass(frozen=True, kw_only=True, slots=True)
class ConnectionAttempt:
    """An attempt, from inside the sandbox, to reach an address outside it: refused there, never left it."""

    at: datetime
    """When the watcher saw it (UTC)."""
    protocol: Literal["tcp", "udp"]
    """`tcp`: a connect (its SYN); `udp`: a datagram sent."""
    address: str
    """The IPv4 or IPv6 address it was sent to."""
    port: int
    lookup: str | None = None
    """For a DNS query (a datagram to port 53): the name it asked for."""

    @property
    def target(self) -> str:
        """`address:port` (`[address]:port` for IPv6)."""
        return f"[{self.address}]:{self.port}" if ":" in self.address else f"{self.address}:{self.port}"

    def to_event(self) -> ConnectionAttemptEvent:
        """The attempt as an event of the run's stream."""
        return ConnectionAttemptEvent(
            at=self.at, protocol=self.protocol, address=self.address, port=self.port, lookup=self.lookup
        )


def parse_attempt(line: bytes) -> ConnectionAttempt | None:
    """One reported line as an attempt, or None when it is not a well-formed one (it came from inside)."""
    try:
        record: Any = json.loads(line)
        protocol, port, lookup = record["protocol"], record["port"], record.get("lookup")
        address = str(ipaddress.ip_address(record["address"]))
        at = datetime.fromtimestamp(float(record["at"]), UTC)
    except (ValueError, TypeError, KeyError, OverflowError, OSError):
        return None
    if protocol not in ("tcp", "udp") or type(port) is not int or not 0 <= port <= 65535:
        return None
    if lookup is not None and (not isinstance(lookup, str) or len(lookup) > _MAX_NAME):
        return None
    return ConnectionAttempt(at=at, protocol=protocol, address=address, port=port, lookup=lookup)


def ask(control: Path, line: str, timeout: float) -> str:
    """Send one line to a helper's control socket (`_netshim.py --control`) and return its answer."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as asking:
        asking.settimeout(timeout)
        asking.connect(str(control))
        asking.sendall(line.encode() + b"\n")
        return asking.makefile().readline().strip()


class AttemptRecorder:
    """The outside end of the watchers' reports: a Unix socket at `path`, read without blocking by `take()`.

    `control` is the watcher's control socket: `settle()` asks it to report every packet it has seen, so what a
    command that has ended attempted is all here (the watcher reads the namespace's traffic as it happens, in a
    process of its own).
    """

    def __init__(self, path: Path, control: Path | None = None) -> None:
        self.path = path
        self.control = control
        path.parent.mkdir(exist_ok=True)
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(str(path))
        self._listener.listen(64)
        self._listener.setblocking(False)
        self._open: dict[socket.socket, bytes] = {}
        self._kept = 0
        self.dropped = 0
        """Attempts reported past `MAX_ATTEMPTS`, read and not kept."""

    async def settle(self) -> None:
        """Wait until the watcher has reported every attempt made so far (a watcher that is gone has no more)."""
        if self.control is None:
            return
        try:
            await anyio.to_thread.run_sync(ask, self.control, "flush", _SETTLE_S)
        except OSError:
            return

    def take(self) -> list[ConnectionAttempt]:
        """The attempts reported since the last call, in the order they were seen."""
        self._accept()
        found: list[ConnectionAttempt] = []
        for connection in list(self._open):
            data, ended = _available(connection)
            lines = (self._open[connection] + data).split(b"\n")
            self._open[connection] = lines.pop()[:_MAX_LINE]
            found += [attempt for line in lines if (attempt := parse_attempt(line)) is not None]
            if ended:
                connection.close()
                del self._open[connection]
        found.sort(key=lambda attempt: attempt.at)
        kept = found[: max(0, MAX_ATTEMPTS - self._kept)]
        self._kept += len(kept)
        self.dropped += len(found) - len(kept)
        return kept

    def close(self) -> None:
        """Stop listening (a watcher still running reconnects to the next recorder at the same path, if any)."""
        for connection in self._open:
            connection.close()
        self._open.clear()
        self._listener.close()
        self.path.unlink(missing_ok=True)

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self._listener.accept()
            except BlockingIOError:
                return
            connection.setblocking(False)
            self._open[connection] = b""


def _available(connection: socket.socket) -> tuple[bytes, bool]:
    """What the connection holds now, and whether its writer has closed it."""
    chunks: list[bytes] = []
    while True:
        try:
            chunk = connection.recv(65536)
        except BlockingIOError:
            return b"".join(chunks), False
        except OSError:
            return b"".join(chunks), True
        if not chunk:
            return b"".join(chunks), True
        chunks.append(chunk)
