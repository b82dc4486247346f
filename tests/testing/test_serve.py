"""`serve()`, the blocking entry of `niceeval testing serve`, in a real subprocess stopped with Ctrl-C."""

from __future__ import annotations

import re
import signal
import subprocess
import sys

import anthropic
import openai

SERVER = """
from niceeval.testing import LLMRequest, serve

def script(request: LLMRequest) -> str:
    return f"{request.provider} heard: {request.last_user_text}"

serve(port=0, script=script)
print("serve returned", flush=True)
"""


def test_serve_until_interrupted() -> None:
    with subprocess.Popen(
        [sys.executable, "-c", SERVER], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as process:
        try:
            assert process.stdout is not None
            first_line = process.stdout.readline()
            match = re.search(r"listening on (http://127\.0\.0\.1:\d+)", first_line)
            assert match, first_line
            url = match.group(1)
            with openai.OpenAI(base_url=f"{url}/v1", api_key="k", max_retries=0) as client:
                completion = client.chat.completions.create(
                    model="m", messages=[{"role": "user", "content": "ping"}]
                )
            with anthropic.Anthropic(base_url=url, api_key="k", max_retries=0) as claude:
                message = claude.messages.create(
                    model="m", max_tokens=5, messages=[{"role": "user", "content": "pong"}]
                )
        finally:
            process.send_signal(signal.SIGINT)
            out, err = process.communicate(timeout=10)
    assert completion.choices[0].message.content == "openai heard: ping"
    assert message.content[0].type == "text" and message.content[0].text == "anthropic heard: pong"
    assert process.returncode == 0, err
    assert "serve returned" in out
    assert "POST /v1/chat/completions" in out  # uvicorn's access log


def test_a_long_lived_server_counts_its_requests_without_keeping_them() -> None:
    """`niceeval testing serve` answers for hours and nobody reads its log: kept, every request stayed in memory
    (the benchmark's server grew past 2 GB and paused for its garbage collector)."""
    import anyio

    from niceeval.testing import LLMRequest
    from niceeval.testing._script import ScriptExhaustedError, ScriptRunner

    kept = ScriptRunner(["one"], faults=None, latency=0.0)
    counted = ScriptRunner(["one"], faults=None, latency=0.0, keep_requests=False)
    first, second = LLMRequest.from_prompt("Capital of France?"), LLMRequest.from_prompt("And of Italy?")
    for runner in (kept, counted):
        for request in (first, second):
            runner.record(request)
    assert [r.last_user_text for r in kept.requests] == ["Capital of France?", "And of Italy?"]
    assert counted.requests == []

    async def answer(runner: ScriptRunner) -> str:
        await runner.next_reply(first)
        try:
            await runner.next_reply(second)
        except ScriptExhaustedError as exc:
            return str(exc)
        raise AssertionError("a one-reply script answered twice")

    assert "request #2 " in anyio.run(answer, counted)  # numbered all the same
    assert "request #2 " in anyio.run(answer, kept)
