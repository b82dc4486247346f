"""A throwaway PostgreSQL cluster for the test session: initdb + pg_ctl from Debian's packages, on a Unix socket.

PostgreSQL refuses to run as root, so under root the cluster belongs to `nobody` (commands via `runuser`).
Nothing listens on TCP; the socket and data live in a temporary folder removed at the end.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
import uuid
from pathlib import Path

SUPERUSER = "niceeval"


def _bin_dir() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[4]))
    return Path(found[-1]).parent if found else None


def unavailable_reason() -> str | None:
    """Why no cluster can be started here (None: it can)."""
    if _bin_dir() is None:
        return "PostgreSQL is not installed (Debian package `postgresql`; scripts/system-deps.sh installs it)"
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        return "running as root without `runuser` to start PostgreSQL as a non-root user"
    return None


class Cluster:
    """A running cluster; `database()` makes a fresh, empty database and returns its SQLAlchemy URL."""

    def __init__(self) -> None:
        bin_dir = _bin_dir()
        assert bin_dir is not None
        self._bin = bin_dir
        self.base = Path(tempfile.mkdtemp(prefix="niceeval-pg-"))
        self.data = self.base / "data"
        self.socket_dir = self.base / "run"
        self.socket_dir.mkdir()
        self._as_root = os.geteuid() == 0
        if self._as_root:
            os.chmod(self.base, 0o755)
            shutil.chown(self.base, "nobody")
            shutil.chown(self.socket_dir, "nobody")

    def _run(self, *command: str) -> None:
        prefix = ["runuser", "-u", "nobody", "--"] if self._as_root else []
        proc = subprocess.run([*prefix, *command], capture_output=True, text=True, timeout=120, cwd=self.base)
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")

    def start(self) -> None:
        self._run(
            str(self._bin / "initdb"), "-D", str(self.data), "-U", SUPERUSER, "--auth=trust", "--no-sync",
            "-E", "UTF8", "--locale=C",
        )  # fmt: skip
        options = (
            f"-c listen_addresses='' -c unix_socket_directories={self.socket_dir} -c fsync=off "
            "-c synchronous_commit=off -c full_page_writes=off -c max_connections=200"
        )
        self._run(
            str(self._bin / "pg_ctl"), "-D", str(self.data), "-l", str(self.base / "log"), "-o", options,
            "-w", "-t", "60", "start",
        )  # fmt: skip

    def stop(self) -> None:
        try:
            self._run(str(self._bin / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.base, ignore_errors=True)

    def url(self, database: str = "postgres") -> str:
        return f"postgresql+psycopg://{SUPERUSER}@/{database}?host={self.socket_dir}"

    def database(self) -> str:
        """A new empty database's URL."""
        import psycopg

        name = f"t_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(host=str(self.socket_dir), user=SUPERUSER, dbname="postgres", autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')  # type: ignore[arg-type]  # a fixed-shape name, not input
        return self.url(name)
