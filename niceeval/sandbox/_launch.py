"""Long-running processes in a sandbox: how to start one (a coding agent's CLI) and which sandbox is current.

`run_command` suits commands that finish and are judged by their result. An agent's CLI streams events for
minutes and is read line by line by its adapter, so the sandbox only says *how* to start it (`launch`): the
argv (wrapped in `bwrap` by the bubblewrap sandbox), the environment and the working directory; the caller
runs it, reads it, and kills its process group.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True, kw_only=True)
class LaunchOptions:
    """What a launched process needs beyond the workspace."""

    env: Mapping[str, str] = field(default_factory=dict)
    """Variables added to the sandbox's scrubbed environment (the CLI's endpoint and key)."""
    allow_network: tuple[str, ...] = ()
    """`host:port` endpoints the process may reach (the model endpoint); an isolating sandbox blocks the rest."""
    read_only: tuple[Path, ...] = ()
    """Host paths the process reads (the CLI's installation), made visible by an isolating sandbox."""
    writable: tuple[Path, ...] = ()
    """Host paths the process writes besides the workspace (the CLI's own state: sessions, settings)."""


@dataclass(frozen=True, kw_only=True)
class ProcessLaunch:
    """How to start a process in the sandbox: run `argv` in `cwd` with exactly `env`, in a new session."""

    argv: tuple[str, ...]
    env: Mapping[str, str]
    cwd: Path
