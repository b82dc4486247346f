"""The real `niceeval view` as a subprocess, and Debian's Chromium driven by Playwright (never a downloaded browser)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium")


def unavailable(reason: str) -> None:
    """Skip a test whose service is missing, except in CI, where it must be there."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true but {reason}", pytrace=False)
    pytest.skip(reason)


@contextmanager
def chromium() -> Iterator[Any]:
    """A headless Chromium (Debian's package) under Playwright's sync API."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        unavailable("playwright is not installed: pip install -e '.[test]'")
    if not CHROMIUM.exists():
        unavailable(f"{CHROMIUM} is missing: bash scripts/system-deps.sh installs Debian's chromium")
    with sync_playwright() as playwright:
        # --no-sandbox: Chromium refuses to sandbox as root (CI containers); pages here are our own app.
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        try:
            yield browser
        finally:
            browser.close()


@contextmanager
def viewer(cwd: Path, *args: str, env: dict[str, str] | None = None) -> Iterator[str]:
    """`niceeval view --port 0 ARGS` in `cwd`; yields the URL it printed, stops it after."""
    process = subprocess.Popen(
        [sys.executable, "-m", "niceeval.cli", "view", "--port", "0", *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, **(env or {})},
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        found = re.search(r"niceeval viewer on (\S+)", line)
        assert found, f"`niceeval view` printed no URL: {line!r}{process.stdout.read() if not line else ''}"
        yield found.group(1)
    finally:
        process.terminate()
        process.wait(timeout=10)
        if process.stdout:
            process.stdout.close()
