"""What reports say about a run's Docker sandbox: which attempts shared a container (`reuse=True`), its image's
size and build time (kept as an image label, so every later run and `niceeval sandbox list` know it), in the run's
result, the JSON report, the console and the viewer's eval-run page."""

from __future__ import annotations

import json
import subprocess
import uuid
from pathlib import Path

import anyio
import pytest
from docker_helpers import BASE_IMAGE, needs_docker

from niceeval import EvalContext, define_eval
from niceeval._core.results import RunResult, SandboxRecord
from niceeval._core.summary import PlannedEval, Problem, SuiteSummary
from niceeval._run.discovery import EvalEntry
from niceeval._run.execute import ExecOptions, execute
from niceeval._run.suite import SuiteOptions, run_suite
from niceeval.cli._main import main
from niceeval.report.json_report import run_json
from niceeval.sandbox import docker_sandbox


@pytest.fixture
def project(tmp_path: Path) -> Path:
    needs_docker()
    fixture = tmp_path / "fixtures" / "app"
    fixture.mkdir(parents=True)
    (fixture / "app.py").write_text("VALUE = 1\n")
    return tmp_path


class Collect:
    def __init__(self) -> None:
        self.runs: list[RunResult] = []

    def start(self, plan: list[PlannedEval], problems: list[Problem]) -> None:
        pass

    def run_finished(self, result: RunResult) -> None:
        self.runs.append(result)

    def finish(self, summary: SuiteSummary) -> None:
        pass


def three_attempts(project: Path, reuse: bool) -> list[RunResult]:
    @define_eval(fixture="fixtures/app", sandbox=docker_sandbox(image=BASE_IMAGE, reuse=reuse))
    async def attempts(t: EvalContext) -> None:
        await t.sandbox.run_shell("true")

    collect = Collect()
    options = SuiteOptions(runs=3, concurrency=3, exec=ExecOptions(timeout=120, root=project))
    anyio.run(run_suite, [EvalEntry(id=f"x.py::attempts-{reuse}", spec=attempts)], [], options, [collect])
    return sorted(collect.runs, key=lambda run: run.run_index)


def test_reused_attempts_say_they_shared_one_container(project: Path) -> None:
    runs = three_attempts(project, reuse=True)
    records = [run.sandbox for run in runs]
    assert all(record is not None for record in records), [run.error for run in runs]
    # The attempts take turns in whatever order they get there; each lists those before it and itself.
    first, second, third = sorted((r for r in records if r is not None), key=lambda record: len(record.attempts))
    assert first.container == second.container == third.container and len(first.container or "") == 12
    assert third.attempts[:1] == first.attempts and third.attempts[:2] == second.attempts
    assert sorted(third.attempts) == [0, 1, 2]
    assert (first.kind, first.image, first.image_build_s) == ("docker", BASE_IMAGE, None)
    assert first.image_size_bytes and first.image_size_bytes > 10_000_000
    assert all(record.open_s is not None and record.open_s > 0 for record in (first, second, third))

    last = next(run for run in runs if run.sandbox is not None and len(run.sandbox.attempts) == 3)
    assert json.loads(run_json(last))["sandbox"]["attempts"] == third.attempts


def test_fresh_attempts_each_have_their_own_container(project: Path) -> None:
    runs = three_attempts(project, reuse=False)
    records = [run.sandbox for run in runs if run.sandbox is not None]
    assert len({record.container for record in records}) == 3
    assert [record.attempts for record in records] == [[0], [1], [2]]


def test_a_built_images_build_time_is_reported_by_every_run_and_sandbox_list(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "Dockerfile").write_text(f"FROM {BASE_IMAGE}\nRUN echo {uuid.uuid4().hex} > /unique.txt\n")

    @define_eval(fixture="fixtures/app", sandbox=docker_sandbox(dockerfile="Dockerfile"))
    async def built(t: EvalContext) -> None:
        await t.sandbox.run_shell("true")

    entry = EvalEntry(id="x.py::built", spec=built)
    first, second = (anyio.run(execute, entry, 0, ExecOptions(timeout=120, root=project)) for _ in range(2))
    assert first.sandbox is not None and second.sandbox is not None, first.error
    tag = first.sandbox.image
    try:
        assert tag is not None and tag.startswith("niceeval-build:")
        assert (first.sandbox.image_built_now, second.sandbox.image_built_now) == (True, False)
        took = first.sandbox.image_build_s
        assert took is not None and took > 0 and second.sandbox.image_build_s == took
        assert main(["sandbox", "list"]) == 0
        listed = capsys.readouterr().out
        assert "BUILT IMAGE" in listed
        (line,) = [line for line in listed.splitlines() if line.startswith(tag)]
        assert line.endswith(f"{took:g} s") and " MB" in line
    finally:
        subprocess.run(["docker", "image", "rm", str(tag)], capture_output=True, check=False)


def test_the_console_names_the_container_and_the_runs_that_shared_it() -> None:
    from niceeval.report._grouping import container_lines

    def run(index: int, container: str, attempts: list[int]) -> RunResult:
        record = SandboxRecord(
            kind="docker",
            container=container,
            attempts=attempts,
            image="niceeval-build:abc",
            image_size_bytes=253_000_000,
            image_build_s=4.1,
        )
        return RunResult(eval_id="x.py::e", file="x.py", line=1, run_index=index, outcome="passed", duration_s=1,
                         sandbox=record)  # fmt: skip

    lines = container_lines([run(0, "aaa", [0]), run(1, "aaa", [0, 1]), run(2, "bbb", [2])])
    assert lines == [
        "docker container aaa (runs 1-2 (2×)), image niceeval-build:abc, 253 MB, built in 4.1 s",
        "docker container bbb (run 3), image niceeval-build:abc, 253 MB, built in 4.1 s",
    ]
