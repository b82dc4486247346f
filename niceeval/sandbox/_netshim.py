"""Runs inside the sandbox, before the command: process limits, and the allowed endpoints forwarded.

The sandbox has its own network namespace, where only loopback exists and nothing listens. For each allowed
endpoint `HOST:PORT=SOCKET` this listens on HOST:PORT inside and forwards every connection to SOCKET, a Unix
socket that niceeval serves outside and connects to the real HOST:PORT. Every other address is unreachable
(refused at once, with `--watch`).

With `--watch SOCKET` it also records every attempt to reach an address outside the sandbox: it routes every IPv4
and IPv6 address to loopback inside the namespace (a `local` route in the namespace's own table: nothing of the
host's network changes), so a TCP connect to such an address is refused at once (nothing listens) and a UDP datagram
goes nowhere, and it reads the namespace's loopback traffic with a packet socket: each TCP SYN and UDP datagram to a
non-loopback address (a DNS query with the name it asks for) is written as a JSON line to SOCKET, a Unix socket
niceeval reads outside. Setting up needs CAP_NET_ADMIN and CAP_NET_RAW in the namespace (bwrap run by root has them;
Docker gives them to a watcher container of its own, which shares the sandbox's namespace and runs nothing else).

A bwrap sandbox run by root keeps one such helper per sandbox (`--control SOCKET`: it forwards each endpoint asked
for on that socket from then on, and its `--ready FILE` holds its PID): every command joins its network namespace.

In a Docker sandbox (`--lifeline`) commands share one container, so no namespace ends with the command: this
becomes the command's subreaper, and when the command ends, or its `docker exec` client goes away (stdin closes:
a timeout, a cancelled eval), it kills whatever the command left behind. There, one relay per endpoint serves
the whole container (`--ready FILE` is written once it listens).

Standard library only, run with `python -I -S`: it must not import niceeval (the project is not in the sandbox).
Usage: `python -I -S _netshim.py [--nproc N] [--fsize BYTES] [--forward HOST:PORT=SOCKET ...] [--ready FILE]
[--watch SOCKET] [--control SOCKET] [--lifeline] -- ARGV...`
"""

from __future__ import annotations

import ctypes
import ipaddress
import json
import os
import resource
import select
import signal
import socket
import struct
import sys
import threading
import time

_LISTENING: set[str] = set()
_ETH_P_ALL = 3
_PACKET_OUTGOING = 4


def _pipe(source: socket.socket, target: socket.socket) -> None:
    try:
        while chunk := source.recv(65536):
            target.sendall(chunk)
    except OSError:
        pass
    finally:
        for end in (source, target):
            try:
                end.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        source.close()


def _serve(listener: socket.socket, path: str) -> None:
    while True:
        client, _ = listener.accept()
        upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            upstream.connect(path)
        except OSError:
            client.close()
            continue
        threading.Thread(target=_pipe, args=(client, upstream), daemon=True).start()
        threading.Thread(target=_pipe, args=(upstream, client), daemon=True).start()


def _listen(endpoint: str, path: str) -> None:
    if endpoint in _LISTENING:
        return
    host, _, port = endpoint.rpartition(":")
    host = host.strip("[]")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((host, int(port)))
        listener.listen(64)
    except BaseException:
        listener.close()
        raise
    _LISTENING.add(endpoint)
    threading.Thread(target=_serve, args=(listener, path), daemon=True).start()


def _route_everything_to_loopback(family: int) -> None:
    """`ip route add local default dev lo` in the namespace's local table, over rtnetlink (no `ip` needed)."""
    rtmsg = struct.pack("BBBBBBBBI", family, 0, 0, 0, 255, 4, 254, 2, 0)  # table local, static, scope host, local
    attrs = struct.pack("HHI", 8, 4, socket.if_nametoindex("lo")) + struct.pack("HHI", 8, 15, 255)  # oif, table
    flags = 0x1 | 0x4 | 0x400 | 0x200  # request, ack, create, exclusive
    body = rtmsg + attrs
    with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0) as link:
        link.bind((0, 0))
        link.send(struct.pack("IHHII", 16 + len(body), 24, flags, 1, 0) + body)  # RTM_NEWROUTE
        error = struct.unpack_from("i", link.recv(4096), 16)[0]
    if error and -error != 17:  # EEXIST: a shared namespace already has it
        raise OSError(-error, os.strerror(-error))


def _lookup(payload: bytes) -> str | None:
    """The name a DNS query asks for, or None when the datagram is not one."""
    labels, at = [], 12
    while at < len(payload) and (size := payload[at]) and size < 64:
        labels.append(payload[at + 1 : at + 1 + size].decode("ascii", "replace"))
        at += 1 + size
    return ".".join(labels) or None


def _attempt(packet: bytes) -> dict[str, object] | None:
    """A TCP SYN or a UDP datagram to an address outside the sandbox, as a record; None for anything else."""
    version = packet[0] >> 4 if packet else 0
    if version == 4 and len(packet) >= 20:
        protocol, target, rest = packet[9], packet[16:20], packet[(packet[0] & 15) * 4 :]
    elif version == 6 and len(packet) >= 40:
        protocol, target, rest = packet[6], packet[24:40], packet[40:]
    else:
        return None
    address = ipaddress.ip_address(target)
    if address.is_loopback or address.is_unspecified or len(rest) < 8:
        return None
    port = int.from_bytes(rest[2:4], "big")
    record: dict[str, object] = {"at": time.time(), "address": str(address), "port": port}
    if protocol == 6 and len(rest) >= 14 and rest[13] & 0x12 == 0x02:  # SYN without ACK: a connect
        return {**record, "protocol": "tcp"}
    if protocol == 17:
        lookup = _lookup(rest[8:]) if port == 53 else None
        return {**record, "protocol": "udp", **({"lookup": lookup} if lookup else {})}
    return None


class _Watcher:
    """Reads the namespace's loopback traffic and reports each attempt to reach outside to niceeval's socket."""

    def __init__(self, report: str) -> None:
        for family in (socket.AF_INET, socket.AF_INET6):
            _route_everything_to_loopback(family)
        self._packets = socket.socket(socket.AF_PACKET, socket.SOCK_DGRAM, socket.htons(_ETH_P_ALL))
        self._packets.bind(("lo", 0))
        self._packets.setblocking(False)
        self._report = report
        self._sink: socket.socket | None = None
        self._reading = threading.Lock()
        self._stop_r, self._stop_w = os.pipe()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Report what the packet socket still holds, then stop (the command has ended)."""
        os.write(self._stop_w, b"x")
        self._thread.join()

    def flush(self) -> None:
        """Report every packet seen so far: the kernel queued a packet's copy here when it was sent, so once this
        returns, niceeval's socket holds every attempt made before the call."""
        with self._reading:
            self._read_all()

    def _run(self) -> None:
        while True:
            ready, _, _ = select.select([self._packets.fileno(), self._stop_r], [], [])
            self.flush()
            if self._stop_r in ready:
                if self._sink is not None:
                    self._sink.close()
                return

    def _read_all(self) -> None:
        lines = []
        while True:
            try:
                packet, where = self._packets.recvfrom(65535)
            except BlockingIOError:
                break
            if where[2] == _PACKET_OUTGOING and (record := _attempt(packet)) is not None:
                lines.append(json.dumps(record) + "\n")
        self._send(lines)

    def _send(self, lines: list[str]) -> None:
        if not lines:
            return
        for _ in range(2):  # a second try on a fresh connection: niceeval's end may have been replaced
            try:
                if self._sink is None:
                    self._sink = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                    self._sink.connect(self._report)
                self._sink.sendall("".join(lines).encode())
                return
            except OSError:
                if self._sink is not None:
                    self._sink.close()
                self._sink = None


def _control(path: str, watcher: _Watcher | None) -> None:
    """Take lines on a Unix socket and answer `ok` or the error: `HOST:PORT=SOCKET` forwards an endpoint from now on,
    `flush` reports every attempt seen so far (niceeval asks when a command has ended)."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    os.chmod(path, 0o666)  # a Docker watcher runs as root; niceeval asks as the user that started it
    listener.listen(16)

    def serve() -> None:
        while True:
            client, _ = listener.accept()
            with client, client.makefile("rw") as lines:
                for line in lines:
                    endpoint, _, target = line.strip().partition("=")
                    try:
                        if endpoint == "flush" and watcher is not None:
                            watcher.flush()
                        else:
                            _listen(endpoint, target)
                        lines.write("ok\n")
                    except (OSError, ValueError, OverflowError) as error:
                        lines.write(f"error {error}\n")
                    lines.flush()

    threading.Thread(target=serve, daemon=True).start()


def _children() -> list[int]:
    me, found = os.getpid(), []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as stat:
                    fields = stat.read().rpartition(b")")[2].split()
            except OSError:
                continue
            if int(fields[1]) == me:
                found.append(int(entry))
    return found


def _kill_descendants() -> None:
    """Kill every process below this one; as their subreaper, it inherits the orphans, so none is missed."""
    while children := _children():
        for pid in children:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for _ in children:
            try:
                os.waitpid(-1, 0)
            except ChildProcessError:
                break


def _watch_lifeline() -> None:
    while os.read(0, 4096):
        pass
    _kill_descendants()
    os._exit(137)


def _wait_for(child: int) -> int:
    while True:
        pid, status = os.wait()  # also reaps the orphans this subreaper inherits
        if pid == child:
            return os.waitstatus_to_exitcode(status)


def _set_up(options: list[str]) -> _Watcher | None:
    """Apply the options in order (`--ready` after `--watch` means: written once every address is watched)."""
    watcher = None
    for flag, value in zip(options[::2], options[1::2], strict=True):
        if flag == "--forward":
            endpoint, _, path = value.partition("=")
            _listen(endpoint, path)
        elif flag == "--nproc":
            resource.setrlimit(resource.RLIMIT_NPROC, (int(value), int(value)))
        elif flag == "--fsize":
            resource.setrlimit(resource.RLIMIT_FSIZE, (int(value), int(value)))
        elif flag == "--ready":
            with open(value, "w") as ready:
                ready.write(str(os.getpid()))
        elif flag == "--control":
            _control(value, watcher)
        elif flag == "--watch":
            watcher = _Watcher(value)
    return watcher


def main(args: list[str]) -> int:
    split = args.index("--")
    options, argv = args[:split], args[split + 1 :]
    lifeline = "--lifeline" in options
    watcher = _set_up([option for option in options if option != "--lifeline"])
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if lifeline:
        ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
        threading.Thread(target=_watch_lifeline, daemon=True).start()
    child = os.fork()
    if child == 0:
        if lifeline:  # the command reads nothing; stdin is the lifeline
            os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
        try:
            os.execvp(argv[0], argv)
        except OSError as error:
            print(f"niceeval sandbox: cannot run {argv[0]!r}: {error.strerror or error}", file=sys.stderr)
            os._exit(127 if isinstance(error, FileNotFoundError) else 126)
    code = _wait_for(child) if lifeline else os.waitstatus_to_exitcode(os.waitpid(child, 0)[1])
    if lifeline:
        _kill_descendants()
    if watcher is not None:
        watcher.stop()
    if code < 0:  # killed by a signal: end the same way, so the caller sees the signal too
        os.kill(os.getpid(), -code)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
