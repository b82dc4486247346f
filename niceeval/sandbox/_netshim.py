"""Runs inside the sandbox, before the command: process limits, and the allowed endpoints forwarded.

The sandbox has its own network namespace, where only loopback exists and nothing listens. For each allowed
endpoint `HOST:PORT=SOCKET` this listens on HOST:PORT inside and forwards every connection to SOCKET, a Unix
socket that niceeval serves outside and connects to the real HOST:PORT. Every other address is unreachable.

In a Docker sandbox (`--lifeline`) commands share one container, so no namespace ends with the command: this
becomes the command's subreaper, and when the command ends, or its `docker exec` client goes away (stdin closes:
a timeout, a cancelled eval), it kills whatever the command left behind. There, one relay per endpoint serves
the whole container (`--ready FILE` is written once it listens).

Standard library only, run with `python -I -S`: it must not import niceeval (the project is not in the sandbox).
Usage: `python -I -S _netshim.py [--nproc N] [--fsize BYTES] [--forward HOST:PORT=SOCKET ...] [--ready FILE]
[--lifeline] -- ARGV...`
"""

from __future__ import annotations

import ctypes
import os
import resource
import signal
import socket
import sys
import threading


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
    host, _, port = endpoint.rpartition(":")
    host = host.strip("[]")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((host, int(port)))
    listener.listen(64)
    threading.Thread(target=_serve, args=(listener, path), daemon=True).start()


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


def main(args: list[str]) -> int:
    split = args.index("--")
    options, argv = args[:split], args[split + 1 :]
    lifeline = "--lifeline" in options
    options = [option for option in options if option != "--lifeline"]
    for flag, value in zip(options[::2], options[1::2], strict=True):
        if flag == "--forward":
            endpoint, _, path = value.partition("=")
            _listen(endpoint, path)
        elif flag == "--nproc":
            resource.setrlimit(resource.RLIMIT_NPROC, (int(value), int(value)))
        elif flag == "--fsize":
            resource.setrlimit(resource.RLIMIT_FSIZE, (int(value), int(value)))
        elif flag == "--ready":
            open(value, "w").close()
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
    if code < 0:  # killed by a signal: end the same way, so the caller sees the signal too
        os.kill(os.getpid(), -code)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
