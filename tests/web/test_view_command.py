"""`niceeval view` as a user starts it: the URL it prints, and the token it demands off loopback."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from _viewer import viewer


@pytest.mark.slow
def test_view_serves_the_runs_page_on_loopback_without_a_token(tmp_path: Path) -> None:
    with viewer(tmp_path) as url:
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/", url)
        response = httpx.get(url, timeout=10)
    assert response.status_code == 200 and "<h1>Runs</h1>" in response.text


@pytest.mark.slow
def test_view_on_every_interface_prints_a_token_and_demands_it(tmp_path: Path) -> None:
    with viewer(tmp_path, "--host", "0.0.0.0") as url:
        token = url.split("?token=")[1]
        port = re.search(r":(\d+)/", url).group(1)  # type: ignore[union-attr]
        local = f"http://127.0.0.1:{port}/"
        refused = httpx.get(local, timeout=10)
        allowed = httpx.get(local, params={"token": token}, timeout=10, follow_redirects=True)
    assert refused.status_code == 401
    assert allowed.status_code == 200 and "<h1>Runs</h1>" in allowed.text


def test_view_on_a_busy_port_says_so_and_exits_2(tmp_path: Path) -> None:
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "niceeval.cli", "view", "--port", str(port)],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=30,
        )
    assert done.returncode == 2 and "pick another --port" in done.stderr
