"""`niceeval run --baseline RUN` gates as `niceeval diff RUN <this run>` does: exit 1 only beyond noise."""

from __future__ import annotations

import pytest

from ._project import Project

CONFIG = """\
from niceeval import define_config


def agent(message: str) -> str:
    return "echo: " + message


config = define_config(agent=agent)
"""

EVALS = """\
from niceeval import define_eval
from niceeval.expect import includes


@define_eval
async def fine(t):
    await t.send("hi")
    t.check(t.reply, includes("hi"))


@define_eval
async def other(t):
    await t.send("hello")
    t.check(t.reply, includes("hello"))
"""


@pytest.fixture
def gated(project: Project) -> Project:
    project.write("niceeval.config.py", CONFIG)
    project.write("evals/ci.py", EVALS)
    return project


def _base_then_broken_head(project: Project, store: str) -> str:
    base = project.run("--store", store).report()["run_id"]
    project.write("evals/ci.py", EVALS.replace('includes("hi")', 'includes("bye")'))
    return str(base)


def test_one_flip_against_the_baseline_is_noise_and_the_run_keeps_its_own_exit_code(gated: Project) -> None:
    store = f"sqlite:///{gated.out / 'results.db'}"
    base = _base_then_broken_head(gated, store)
    result = gated.run("--store", store, "-k", "other", "--baseline", base)
    assert result.code == 0, result.output
    assert f"diff {base} -> " in result.stdout
    assert "no regression beyond noise at alpha 0.05" in result.stdout


def test_a_drop_past_max_drop_fails_the_run_and_says_why(gated: Project) -> None:
    store = f"sqlite:///{gated.out / 'results.db'}"
    base = _base_then_broken_head(gated, store)
    result = gated.run("--store", store, "-k", "fine", "--baseline", base, "--max-drop", "0.5")
    assert result.code == 1, result.output
    assert f"diff {base} -> " in result.stdout
    assert "REGRESSED: suite pass rate dropped by 1.000, more than --max-drop 0.5" in result.stdout


def test_the_same_drop_without_max_drop_is_within_noise_but_the_failed_eval_still_fails_the_run(gated: Project) -> None:
    store = f"sqlite:///{gated.out / 'results.db'}"
    base = _base_then_broken_head(gated, store)
    result = gated.run("--store", store, "-k", "fine", "--baseline", base)
    assert result.code == 1, result.output  # the eval failed: the baseline never lowers the run's own code
    assert "no regression beyond noise" in result.stdout


def test_baseline_without_the_store_exits_2_before_running(gated: Project) -> None:
    result = gated.run("--no-store", "--baseline", "latest")
    assert result.code == 2
    assert "--baseline reads the results store" in result.stderr
    assert "PASS" not in result.stdout


def test_baseline_latest_tilde_counts_back_from_the_latest_run_other_than_this_one(gated: Project) -> None:
    store = f"sqlite:///{gated.out / 'results.db'}"
    first = gated.run("--store", store).report()["run_id"]
    second = gated.run("--store", store).report()["run_id"]
    result = gated.run("--store", store, "--baseline", "latest~1")  # latest other than this: second; one before
    assert result.code == 0, result.output
    assert f"diff {first} -> " in result.stdout and second not in result.stdout
    too_far = gated.run("--store", store, "--baseline", "latest~9")
    assert too_far.code == 2
    assert (
        "--baseline latest~9: the results store holds only 3 other suite runs" in too_far.stderr
    )  # this one is not counted
    assert "PASS" not in too_far.stdout  # refused before anything ran


def test_diff_reads_latest_tilde_one_as_the_run_before_the_latest(gated: Project) -> None:
    store = f"sqlite:///{gated.out / 'results.db'}"
    first = gated.run("--store", store).report()["run_id"]
    second = gated.run("--store", store).report()["run_id"]
    result = gated.cli("diff", "latest~1", "latest", "--store", store)
    assert result.code == 0, result.output
    assert f"diff {first} -> {second}" in result.stdout
