"""A bwrap sandbox's one network namespace, when it records connection attempts (bwrap run by root).

`NetworkHolder` starts `_netshim.py --watch --control` in a new network namespace (bwrap `--unshare-net`) for the
sandbox's life: it routes every address to that namespace's loopback, records each attempt to reach outside, and
relays the allowed endpoints asked for on its control socket. Each command joins that namespace (`nsenter --net`)
in its own user, PID, IPC and UTS namespaces, so a command pays for no Python start-up of its own.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import anyio
import anyio.abc

from niceeval._core.errors import NiceevalError
from niceeval.sandbox._network import ask

_READY_S = 10.0
_SYSTEM = ("--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev")


class NetworkHolderError(NiceevalError):
    """The sandbox's network namespace did not come up, or refused to forward an endpoint."""


class NetworkHolder:
    """The helper holding a bwrap sandbox's network namespace; see the module docstring."""

    def __init__(self, process: anyio.abc.Process, pid: int, control: Path) -> None:
        self._process = process
        self.namespace = f"/proc/{pid}/ns/net"
        """What commands join (`nsenter --net=...`)."""
        self.control = control
        """Its control socket: endpoints to forward, and `flush` (`AttemptRecorder.settle`)."""
        self._forwarded: set[str] = set()

    @classmethod
    async def start(cls, folder: Path, report: Path, shim: Path) -> NetworkHolder:
        """Start the helper with its sockets in `folder`, reporting attempts to `report`; wait until it listens.

        Raises:
            NetworkHolderError: It exited or did not get ready in time (its error output in the message).
        """
        folder.mkdir(exist_ok=True)
        ready, control = folder / "holder.ready", folder / "holder.sock"
        helper = [sys.executable, "-I", "-S", str(shim), "--watch", str(report), "--control", str(control)]
        argv = ["bwrap", "--unshare-net", "--die-with-parent", *_SYSTEM, "--bind", str(folder), str(folder)]
        argv += [*helper, "--ready", str(ready)]
        process = await anyio.open_process([*argv, "--", "sleep", "infinity"], stderr=subprocess.PIPE)
        with anyio.move_on_after(_READY_S):
            while process.returncode is None:
                if ready.exists() and (pid := ready.read_text()).isdigit():
                    return cls(process, int(pid), control)
                await anyio.sleep(0.01)
        error = b""
        if process.returncode is not None and process.stderr is not None:
            error = await process.stderr.receive()
        await _end(process)
        raise NetworkHolderError(
            "the bwrap sandbox's network namespace did not come up: "
            + (error.decode(errors="replace").strip() or f"no answer within {_READY_S:g} s")
        )

    async def forward(self, endpoint: str, target: Path) -> None:
        """Relay `endpoint` (`HOST:PORT` inside) to the Unix socket `target`, from now on, for every command."""
        if endpoint in self._forwarded:
            return
        answer = await anyio.to_thread.run_sync(ask, self.control, f"{endpoint}={target}", _READY_S)
        if answer != "ok":
            raise NetworkHolderError(f"the sandbox could not forward {endpoint}: {answer}")
        self._forwarded.add(endpoint)

    async def stop(self) -> None:
        """End the helper (and with it the namespace)."""
        await _end(self._process)


async def _end(process: anyio.abc.Process) -> None:
    with anyio.CancelScope(shield=True):
        if process.returncode is None:
            process.kill()
        await process.wait()
        await process.aclose()
