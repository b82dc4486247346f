"""Eval groups: members run in order in one sandbox per attempt, setup once before them, teardown once after."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from niceeval import UsageError, define_eval, define_eval_group
from niceeval._run.discovery import EvalEntry
from niceeval._run.shard import shard_key
from niceeval.cli._main import main
from niceeval.sandbox import bwrap_problem
from niceeval.store import Store

sys.path.insert(0, str(Path(__file__).resolve().parent / "sandbox"))  # the Docker helpers beside those tests

GROUP = """\
from pathlib import Path

from niceeval import define_eval, define_eval_group
from niceeval.expect import equals
{imports}

LOG = Path(__file__).parent / "log.txt"


class EvalFatalError(Exception):
    pass


def note(text):
    with LOG.open("a") as log:
        log.write(text + "\\n")


@define_eval
async def create(t):
    note(f"create {{t.sandbox.path}}")
    await t.sandbox.write_text("made.txt", "one")
    t.check(await t.sandbox.read_text("seed.txt"), equals("seeded"))


@define_eval
async def breaks(t):
    note(f"breaks {{t.sandbox.path}}")
    {breaks}


@define_eval
async def reads(t):
    note(f"reads {{t.sandbox.path}}")
    shown = await t.sandbox.run_shell("cat made.txt README")
    t.check(shown.stdout, equals("onefrom the fixture\\n"))


async def seed(sandbox):
    note(f"setup {{sandbox.path}}")
    await sandbox.write_text("seed.txt", "seeded")


async def clean(sandbox):
    note(f"teardown {{sandbox.path}}")


flow = define_eval_group(
    "flow", evals=[create, breaks, reads], fixture="fixtures/app", sandbox={sandbox}, setup={setup}, teardown={teardown}
)


@define_eval
def alone(t):
    note("alone")
"""


def write_project(
    root: Path,
    *,
    sandbox: str = "'local'",
    setup: str = "seed",
    teardown: str = "clean",
    breaks: str = "raise ValueError('boom')",
    imports: str = "",
) -> None:
    (root / "fixtures" / "app").mkdir(parents=True, exist_ok=True)
    (root / "fixtures" / "app" / "README").write_text("from the fixture\n")
    text = GROUP.format(sandbox=sandbox, setup=setup, teardown=teardown, breaks=breaks, imports=imports)
    (root / "flow.py").write_text(text)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    write_project(tmp_path)
    return tmp_path


def run(project: Path, *flags: str) -> tuple[int, dict[str, Any]]:
    code = main(["run", "flow.py", "--no-store", "--json", "out.json", *flags])
    return code, json.loads((project / "out.json").read_text())


def runs_of(report: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    return {e["id"].split("::")[1]: e["runs"] for e in report["evals"]}


def group_line(project: Path) -> int:
    lines = (project / "flow.py").read_text().splitlines()
    return next(number for number, line in enumerate(lines, 1) if line.startswith("flow = define_eval_group("))


def attempts(project: Path) -> dict[str, list[str]]:
    """What each attempt did, in order, by its sandbox's path (attempts run at the same time)."""
    steps: dict[str, list[str]] = {}
    for line in (project / "log.txt").read_text().splitlines():
        step, _, path = line.partition(" ")
        if path:
            steps.setdefault(path, []).append(step)
    return steps


def test_each_attempt_runs_the_members_in_order_in_one_sandbox_between_setup_and_teardown(project: Path) -> None:
    code, report = run(project, "--runs", "2")
    assert code == 1  # `breaks` failed
    assert list(attempts(project).values()) == [["setup", "create", "breaks", "reads", "teardown"]] * 2
    runs = runs_of(report)
    assert {name: [r["outcome"] for r in done] for name, done in runs.items()} == {
        "create": ["passed", "passed"],
        "breaks": ["failed", "failed"],
        "reads": ["passed", "passed"],
        "alone": ["passed", "passed"],
    }
    assert [e["id"] for e in report["evals"]] == [
        "flow.py::alone",
        "flow.py::create",
        "flow.py::breaks",
        "flow.py::reads",
    ]


def test_a_members_commands_are_recorded_in_its_own_run(project: Path) -> None:
    _, report = run(project)
    shells = {
        name: [e for e in done[0]["events"] if e["type"] == "action.called"] for name, done in runs_of(report).items()
    }
    assert ["cat made.txt README" in json.dumps(e["input"]) for e in shells["reads"]] == [True]
    assert shells["create"] == [] and shells["breaks"] == []
    assert "+one" in runs_of(report)["create"][0]["workspace_diff"]


def test_a_failing_setup_fails_every_member_naming_it_and_teardown_still_runs(project: Path) -> None:
    write_project(project, setup="['exit 3']")
    code, report = run(project)
    assert code == 1
    for name in ("create", "breaks", "reads"):
        (only,) = runs_of(report)[name]
        assert only["outcome"] == "failed"
        assert only["error"]["type"] == "GroupHookError"
        assert only["error"]["message"].startswith(
            "group 'flow': its sandbox or setup failed, so no member ran: GroupHookError: the group's setup "
            "exit 3: `exit 3` exited 3"
        )
    assert [step for steps in attempts(project).values() for step in steps] == ["teardown"]


def test_a_failing_teardown_is_a_warning_on_each_member_and_changes_no_outcome(project: Path) -> None:
    write_project(project, teardown="['echo gone >&2; exit 4']")
    _, report = run(project)
    outcomes = {name: done[0]["outcome"] for name, done in runs_of(report).items()}
    assert outcomes == {"alone": "passed", "create": "passed", "breaks": "failed", "reads": "passed"}
    warning = "group 'flow': teardown echo gone >&2; exit 4 failed: the group's teardown echo gone >&2; exit 4: "
    for name in ("create", "breaks", "reads"):
        assert runs_of(report)[name][0]["warnings"] == [warning + "`echo gone >&2; exit 4` exited 4: gone"]


def test_a_fatal_error_stops_the_later_members_of_the_attempt(project: Path) -> None:
    write_project(project, breaks="raise EvalFatalError('the service is gone')")
    _, report = run(project)
    (reads,) = runs_of(report)["reads"]
    assert reads["outcome"] == "failed"
    assert reads["error"]["type"] == "GroupStopped"
    assert reads["error"]["message"] == "not run: flow.py::breaks raised EvalFatalError earlier in group 'flow'"
    assert list(attempts(project).values()) == [["setup", "create", "breaks", "teardown"]]


def test_selecting_one_member_runs_it_in_the_groups_sandbox_after_its_setup(project: Path) -> None:
    code, report = run(project, "-k", "reads")
    assert code == 1  # `create` did not run, so `made.txt` is missing
    assert list(runs_of(report)) == ["reads"]
    assert list(attempts(project).values()) == [["setup", "reads", "teardown"]]


def test_a_group_runs_in_bwrap(project: Path) -> None:
    if (problem := bwrap_problem()) is not None:
        pytest.skip(problem)
    write_project(project, sandbox="'bwrap'")
    _, report = run(project)
    outcomes = {name: done[0]["outcome"] for name, done in runs_of(report).items()}
    assert outcomes == {"alone": "passed", "create": "passed", "breaks": "failed", "reads": "passed"}
    assert list(attempts(project).values()) == [["setup", "create", "breaks", "reads", "teardown"]]


def test_a_group_runs_in_a_docker_sandbox(project: Path) -> None:
    from docker_helpers import BASE_IMAGE, needs_docker

    needs_docker()
    write_project(
        project,
        sandbox=f"docker_sandbox(image={BASE_IMAGE!r})",
        imports="from niceeval.sandbox import docker_sandbox",
        teardown="['test -f made.txt']",
    )
    _, report = run(project)
    runs = runs_of(report)
    assert {name: done[0]["outcome"] for name, done in runs.items()} == {
        "alone": "passed",
        "create": "passed",
        "breaks": "failed",
        "reads": "passed",
    }
    assert runs["reads"][0]["warnings"] == []


def test_the_members_of_a_group_share_a_shard_at_each_run_index(project: Path) -> None:
    from niceeval._run.discovery import discover

    found = discover(project, ["flow.py"])
    members = [e for e in found.evals if e.eval_group is not None]
    assert [e.id for e in members] == ["flow.py::create", "flow.py::breaks", "flow.py::reads"]
    assert {shard_key(e, 1) for e in members} == {"flow.py::@flow#1"}


def test_two_groups_of_one_name_are_a_load_error_and_their_evals_do_not_run(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = (project / "flow.py").read_text()
    (project / "flow.py").write_text(text + "\nagain = define_eval_group('flow', evals=[alone])\n")
    assert main(["run", "flow.py", "--no-store"]) == 2
    out = capsys.readouterr().out
    line = len(text.splitlines()) + 2
    assert f"flow.py:{line}: two eval groups are named 'flow'; give one a different name." in out
    assert "flow.py::alone" not in out


def test_an_eval_in_two_groups_is_a_load_error(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = (project / "flow.py").read_text()
    (project / "flow.py").write_text(text + "\nagain = define_eval_group('again', evals=[reads])\n")
    assert main(["run", "flow.py", "--no-store"]) == 2
    assert "eval 'reads' is in two groups ('flow', 'again')." in capsys.readouterr().out


def test_a_missing_group_fixture_fails_each_member_naming_the_group(project: Path) -> None:
    (project / "fixtures" / "app" / "README").unlink()
    (project / "fixtures" / "app").rmdir()
    _, report = run(project)
    (create,) = runs_of(report)["create"]
    assert create["error"]["message"].startswith(
        f"group 'flow': its sandbox or setup failed, so no member ran: UsageError: flow.py:{group_line(project)}: "
        "fixture 'fixtures/app' of group 'flow' is not a folder"
    )


@define_eval
async def member(t: object) -> None: ...


def test_a_group_needs_a_name_and_evals_in_order() -> None:
    with pytest.raises(UsageError, match=r"define_eval_group\(\) needs a name first"):
        define_eval_group("", evals=[member])
    with pytest.raises(UsageError, match=r"evals=\.\.\.\) takes the evals in order"):
        define_eval_group("g", evals=[])
    with pytest.raises(UsageError, match=r"plain in define_eval_group\(evals=...\) is not an eval; decorate it"):

        def plain(t: object) -> None: ...

        define_eval_group("g", evals=[plain])  # type: ignore[list-item]
    with pytest.raises(UsageError, match=r"an eval appears twice"):
        define_eval_group("g", evals=[member, member])


def test_a_member_with_its_own_sandbox_options_is_refused() -> None:
    @define_eval(fixture="fixtures/app")
    async def own(t: object) -> None: ...

    with pytest.raises(UsageError, match=r"eval 'own' \(line \d+\) sets fixture=, but a group's members run"):
        define_eval_group("g", evals=[own])

    @define_eval(runs=3)
    async def counted(t: object) -> None: ...

    with pytest.raises(UsageError, match=r"sets runs=.*remove runs= from the eval"):
        define_eval_group("g", evals=[counted])


def test_setup_and_teardown_are_async_functions_or_commands() -> None:
    def sync_setup(sandbox: object) -> None: ...

    with pytest.raises(UsageError, match=r"setup=\.\.\.\) takes an async function of the sandbox"):
        define_eval_group("g", evals=[member], setup=sync_setup)  # type: ignore[arg-type]
    with pytest.raises(UsageError, match=r"teardown=\.\.\.\) takes an async function"):
        define_eval_group("g", evals=[member], teardown="make clean")  # type: ignore[arg-type]
    with pytest.raises(UsageError, match=r"sandbox=\.\.\.\) is one of local, bwrap, docker"):
        define_eval_group("g", evals=[member], sandbox="vm")  # type: ignore[arg-type]


def test_a_group_is_defined_where_it_is_written() -> None:
    group = define_eval_group("g", evals=[member], setup=["make db"])
    assert group.file == Path(__file__).resolve()
    assert group.setup == ("make db",)
    assert EvalEntry(id="x", spec=member, eval_group=group).eval_group_key == "tests/test_eval_groups.py::@g"


def test_pytest_runs_a_group_as_one_item_and_stores_each_member(tmp_path: Path) -> None:
    write_project(tmp_path / "evals")
    (tmp_path / "niceeval.config.py").write_text("from niceeval import define_config\nconfig = define_config()\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "NICEEVAL"))}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:randomly", "evals", "-q"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "FAILED evals/flow.py::@flow - Failed: evals/flow.py::breaks:" in done.stdout
    assert list(attempts(tmp_path / "evals").values()) == [["setup", "create", "breaks", "reads", "teardown"]]
    with Store.open(f"sqlite:///{tmp_path / '.niceeval' / 'results.db'}") as store:
        outcomes = {info.eval_id: info.outcome for info in store.run("latest").eval_runs}
    assert outcomes == {
        "evals/flow.py::alone": "passed",
        "evals/flow.py::create": "passed",
        "evals/flow.py::breaks": "failed",
        "evals/flow.py::reads": "passed",
    }


def test_a_group_attempt_not_started_counts_each_member(project: Path) -> None:
    text = (project / "flow.py").read_text()
    first = "@define_eval\ndef fails_first(t):\n    raise ValueError('first')\n\n\n"
    (project / "flow.py").write_text(
        text.replace("@define_eval\nasync def create", first + "@define_eval\nasync def create")
    )
    code, report = run(project, "-x", "--concurrency", "1", "-k", "fails_first or create or breaks or reads")
    assert code == 1
    assert report["stopped"] == "stopped after the first failed eval (flow.py::fails_first) (-x/--exitfirst)"
    assert report["not_started"] == 3
    assert not (project / "log.txt").exists()


def test_adaptive_repeats_leave_a_groups_members_at_their_first_runs(project: Path) -> None:
    _, report = run(project, "--runs", "1..3")
    runs = runs_of(report)
    assert [len(runs[name]) for name in ("create", "breaks", "reads")] == [1, 1, 1]
    assert len(runs["alone"]) == 3  # an eval alone is repeated while its passes do not settle it
