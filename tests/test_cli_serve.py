"""`niceeval testing serve`: the local LLM server as a command, answering the real SDK."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import openai
import pytest


@pytest.mark.slow
def test_serve_answers_the_openai_sdk_with_a_scripted_reply(tmp_path: Path) -> None:
    (tmp_path / "my_script.py").write_text("def script(request):\n    return 'scripted: ' + request.last_user_text\n")
    process = subprocess.Popen(
        [sys.executable, "-m", "niceeval.cli", "testing", "serve", "--port", "0", "--script", "my_script:script"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert process.stdout is not None
        url = None
        for _ in range(20):
            line = process.stdout.readline()
            if found := re.search(r"base_url=(http://127\.0\.0\.1:\d+/v1)", line):
                url = found.group(1)
                break
        assert url, "the server printed no OpenAI base_url"
        with openai.OpenAI(base_url=url, api_key="test", max_retries=0, timeout=10) as client:
            reply = client.chat.completions.create(model="scripted", messages=[{"role": "user", "content": "hi"}])
        assert reply.choices[0].message.content == "scripted: hi"
    finally:
        process.terminate()
        process.wait(timeout=10)
        if process.stdout:
            process.stdout.close()


def test_serve_refuses_a_script_without_a_name() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "niceeval.cli", "testing", "serve", "--script", "nocolon"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 2 and "--script takes MODULE:NAME" in done.stderr


def test_serve_on_a_busy_port_says_so_and_exits_2() -> None:
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "niceeval.cli", "testing", "serve", "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=30,
        )
    assert done.returncode == 2, done.stderr
    assert "pick another --port" in done.stderr and "Traceback" not in done.stderr
