"""Fixture setup (`@define_eval(fixture=..., setup=[...])`): run once per fixture content, then reused.

The setup commands (install dependencies, build) run in a sandbox of the eval's kind over a copy of the fixture;
the prepared workspace is kept under `.niceeval/fixtures/<hash>/`, the hash covering the fixture's files, the
commands and the sandbox kind. Every run of the eval then copies the prepared folder, so 100 runs install once,
and what setup produced is the baseline the diff starts from. A failing setup fails once: the other runs of that
fixture in the same process get the same error at once, and each is reported as errored.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

import anyio

from niceeval._core.errors import NiceevalError
from niceeval._core.values import tail
from niceeval.sandbox import DEFAULT_HIDDEN, LocalSandbox

SETUP_TIMEOUT_S = 900.0
_DONE = "niceeval-setup-done"

OpenSandbox = Callable[[Path], Awaitable[LocalSandbox]]


class FixtureSetupError(NiceevalError):
    """A fixture's setup command failed: every run of that fixture is errored, with this message."""


_locks: dict[str, anyio.Lock] = {}
_failures: dict[str, FixtureSetupError] = {}


def fixture_key(folder: Path, setup: Sequence[str], kind: str) -> str:
    """A hash of everything the prepared workspace depends on: the files, the commands, the sandbox kind."""
    digest = hashlib.sha256("\0".join((kind, *setup, "")).encode())
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder).as_posix()
        if path.name in DEFAULT_HIDDEN:
            continue
        digest.update(rel.encode() + b"\0")
        if path.is_symlink():
            digest.update(b"link:" + os.readlink(path).encode())
        elif path.is_file():
            digest.update(path.read_bytes())
    return digest.hexdigest()[:20]


async def prepared_fixture(
    folder: Path, setup: Sequence[str], kind: str, cache: Path, open_sandbox: OpenSandbox
) -> Path:
    """The fixture with `setup` applied: from the cache, or made now (once, however many runs ask at once).

    Raises:
        FixtureSetupError: A setup command failed (now, or earlier in this process for the same fixture).
    """
    key = await anyio.to_thread.run_sync(fixture_key, folder, setup, kind)
    target = cache / key
    lock = _locks.setdefault(key, anyio.Lock())
    async with lock:
        if key in _failures:
            raise _failures[key]
        if (target / _DONE).is_file():
            return target / "workspace"
        try:
            await _prepare(folder, setup, target, open_sandbox)
        except FixtureSetupError as error:
            _failures[key] = error
            raise
    return target / "workspace"


async def _prepare(folder: Path, setup: Sequence[str], target: Path, open_sandbox: OpenSandbox) -> None:
    sandbox = await open_sandbox(folder)
    try:
        for command in setup:
            result = await sandbox.run_shell(command, timeout=SETUP_TIMEOUT_S, record=False)
            if not result.succeeded:
                output = tail((result.stdout + result.stderr).strip(), 2000)
                raise FixtureSetupError(
                    f"setup of fixture {folder}: {command!r} {result.error}"
                    + (f":\n{output}" if output else "")
                    + "\nFix the command in @define_eval(setup=[...]) or the fixture; every run of it is errored."
                )

        def keep() -> None:
            shutil.rmtree(target, ignore_errors=True)
            target.mkdir(parents=True)
            shutil.copytree(sandbox.path, target / "workspace", symlinks=True)
            (target / _DONE).write_text("\n".join(setup) + "\n", encoding="utf-8")

        await anyio.to_thread.run_sync(keep)
    finally:
        with anyio.CancelScope(shield=True):
            await sandbox.close()
