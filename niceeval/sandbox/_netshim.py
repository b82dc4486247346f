"""Runs inside the bubblewrap sandbox, before the command: process limits, and the allowed endpoints forwarded.

The sandbox has its own network namespace, where only loopback exists and nothing listens. For each allowed
endpoint `HOST:PORT=SOCKET` this listens on HOST:PORT inside and forwards every connection to SOCKET, a Unix
socket that niceeval serves outside and connects to the real HOST:PORT. Every other address is unreachable.

Standard library only, run with `python -I -S`: it must not import niceeval (the project is not in the sandbox).
Usage: `python -I -S _netshim.py [--nproc N] [--fsize BYTES] [--forward HOST:PORT=SOCKET ...] -- ARGV...`
"""

from __future__ import annotations

import os
import resource
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


def main(args: list[str]) -> int:
    split = args.index("--")
    options, argv = args[:split], args[split + 1 :]
    for flag, value in zip(options[::2], options[1::2], strict=True):
        if flag == "--forward":
            endpoint, _, path = value.partition("=")
            _listen(endpoint, path)
        elif flag == "--nproc":
            resource.setrlimit(resource.RLIMIT_NPROC, (int(value), int(value)))
        elif flag == "--fsize":
            resource.setrlimit(resource.RLIMIT_FSIZE, (int(value), int(value)))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    child = os.fork()
    if child == 0:
        try:
            os.execvp(argv[0], argv)
        except OSError as error:
            print(f"niceeval sandbox: cannot run {argv[0]!r}: {error.strerror or error}", file=sys.stderr)
            os._exit(127 if isinstance(error, FileNotFoundError) else 126)
    code = os.waitstatus_to_exitcode(os.waitpid(child, 0)[1])
    if code < 0:  # killed by a signal: end the same way, so the caller sees the signal too
        os.kill(os.getpid(), -code)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
