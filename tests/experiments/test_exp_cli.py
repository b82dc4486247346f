"""`niceeval exp` end to end: experiments differing in model against the offline server, carry, `--rerun`, accept."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from niceeval.store import Store
from niceeval.testing import LLMRequest, LLMServer, Reply
from tests.e2e._project import Project, Result, make_project

CONFIG = """\
from niceeval import define_config
from niceeval.agents import openai_agent

config = define_config(agent=openai_agent("openai/base-model"))
"""

EVALS = """\
from niceeval import define_eval
from niceeval.expect import includes


@define_eval(tags=["smoke"])
async def capital(t):
    await t.send("Capital of France?")
    t.check(t.reply, includes("Paris"))


@define_eval
async def greeting(t):
    await t.send("hello " + t.flags.get("tone", "plain"))
    t.check(t.reply, includes("says"))
"""

SMALL = """\
from niceeval import define_experiment

experiment = define_experiment(model="openai/small", runs=2, labels={"size": "small"})
"""

LARGE = """\
from niceeval import define_experiment

experiment = define_experiment(model="openai/large", runs=2)
"""


def _reply(request: LLMRequest) -> Reply:
    return Reply(text=f"Paris, says {request.model}")


@pytest.fixture
def server() -> Iterator[LLMServer]:
    with LLMServer(_reply) as running:
        yield running


@pytest.fixture
def project(tmp_path: Path) -> Project:
    made = make_project(tmp_path)
    made.write("niceeval.config.py", CONFIG)
    made.write("evals/geo.py", EVALS)
    made.write("experiments/small.py", SMALL)
    made.write("experiments/large.py", LARGE)
    return made


def _exp(project: Project, server: LLMServer, *args: str) -> Result:
    env = {"OPENAI_API_KEY": "test-key", "OPENAI_BASE_URL": server.base_url}
    return project.cli("exp", *args, "--json", str(project.out / "report.json"), env=env, timeout=120)


def _models(server: LLMServer) -> Counter[str]:
    return Counter(request.model for request in server.requests)


def _store(project: Project) -> Store:
    return Store.open(str(project.root / ".niceeval" / "results.db"), root=project.root)


def test_two_experiments_differing_in_model_run_the_suite_each_as_its_own_suite_run(
    project: Project, server: LLMServer
) -> None:
    done = _exp(project, server)
    assert done.code == 0, done.output
    assert _models(server) == {"small": 4, "large": 4}  # 2 evals x 2 attempts each, on the experiment's model
    with _store(project) as store:
        assert [r.experiment for r in store.runs()] == ["small", "large"]  # latest first: files run in name order
        small = store.runs(experiment="small")[0]
        assert (small.runs_done, small.passed) == (4, 2)
        assert {s.provenance for s in store.run(small.id).eval_runs} == {"executed"}
    report = json.loads((project.out / "report.small.json").read_text())  # one report per experiment
    assert {r["outcome"] for e in report["evals"] for r in e["runs"]} == {"passed"}


def test_more_attempts_later_run_only_the_missing_ones_and_carry_the_rest_by_reference(
    project: Project, server: LLMServer
) -> None:
    assert _exp(project, server, "experiments/small.py").code == 0
    first = len(server.requests)
    again = _exp(project, server, "experiments/small.py", "--runs", "5")
    assert again.code == 0, again.output
    assert len(server.requests) - first == 2 * 3  # 5 attempts after 2: 3 more per eval
    assert "4 attempts carried from earlier runs" in again.stderr
    with _store(project) as store:
        older, latest = store.runs(experiment="small")[1], store.runs(experiment="small")[0]
        slots = store.run(latest.id).eval_runs
        assert [(s.run_index, s.provenance, s.carried_from) for s in slots if s.eval_id.endswith("capital")] == [
            (0, "carried", older.id),
            (1, "carried", older.id),
            (2, "executed", None),
            (3, "executed", None),
            (4, "executed", None),
        ]
        carried = store.eval_run(latest.id, slots[0].eval_id, 0)
        assert carried.events == store.eval_run(older.id, slots[0].eval_id, 0).events  # read through the reference
    report = json.loads((project.out / "report.json").read_text())
    capital = next(e for e in report["evals"] if e["id"].endswith("capital"))
    assert [(r["provenance"], r["carried_from"]) for r in capital["runs"]][:2] == [("carried", older.id)] * 2


def test_rerun_runs_every_attempt_and_a_changed_setup_carries_nothing(project: Project, server: LLMServer) -> None:
    assert _exp(project, server, "experiments/small.py").code == 0
    first = len(server.requests)
    assert _exp(project, server, "experiments/small.py", "--rerun").code == 0
    assert len(server.requests) - first == 4
    project.write("experiments/small.py", SMALL.replace("runs=2", "runs=2, flags={'tone': 'warm'}"))
    before = len(server.requests)
    assert _exp(project, server, "experiments/small.py").code == 0
    assert len(server.requests) - before == 4  # the flags are part of the setup: nothing carried
    assert server.requests[-1].last_user_text in ("hello warm", "Capital of France?")


def test_dry_run_shows_what_is_carried_and_what_will_run_and_calls_nothing(project: Project, server: LLMServer) -> None:
    assert _exp(project, server, "experiments/small.py").code == 0
    first = len(server.requests)
    plan = _exp(project, server, "experiments/small.py", "--runs", "3", "--dry-run")
    assert plan.code == 0, plan.output
    assert len(server.requests) == first
    with _store(project) as store:
        source = store.runs(experiment="small")[0].id
    assert f"evals/geo.py::capital: 2 carried (from {source}), 1 to run" in plan.stdout
    assert "experiment small: 6 attempts: 4 carried, 2 to run" in plan.stdout


def test_accept_adopts_one_attempt_for_the_new_setup_and_changes_nothing_else(
    project: Project, server: LLMServer
) -> None:
    assert _exp(project, server, "experiments/small.py").code == 0
    with _store(project) as store:
        source = store.runs(experiment="small")[0].id
        before = [s.model_dump() for s in store.run(source).eval_runs]
    project.write("experiments/small.py", SMALL.replace("runs=2", "runs=1, flags={'tone': 'warm'}"))
    env = {"OPENAI_API_KEY": "test-key", "OPENAI_BASE_URL": server.base_url}
    accepted = project.cli("accept", source, "evals/geo.py::capital", "1", env=env)
    assert accepted.code == 0, accepted.output
    assert f"accepted attempt 1 of evals/geo.py::capital from suite run {source}" in accepted.stdout
    first = len(server.requests)
    assert _exp(project, server, "experiments/small.py").code == 0
    assert len(server.requests) - first == 1  # capital's one attempt is the accepted one; greeting runs
    with _store(project) as store:
        assert [s.model_dump() for s in store.run(source).eval_runs] == before  # the old run is untouched
        latest = store.runs(experiment="small")[0]
        slots = {s.eval_id: s for s in store.run(latest.id).eval_runs}
        capital = slots["evals/geo.py::capital"]
        assert (capital.provenance, capital.carried_from, capital.carried_index) == ("accepted", source, 1)
        assert slots["evals/geo.py::greeting"].provenance == "executed"


def test_two_experiment_files_with_one_id_are_refused_naming_both(project: Project, server: LLMServer) -> None:
    project.write("experiments/more/small.py", LARGE)
    refused = _exp(project, server)
    assert refused.code == 2
    assert "two experiments have the id 'small': experiments/more/small.py and experiments/small.py" in refused.stderr
    assert server.requests == []


def test_a_flag_no_experiment_sets_names_the_flag_the_eval_and_the_experiments_that_set_flags(
    project: Project, server: LLMServer
) -> None:
    project.write("evals/geo.py", EVALS.replace('t.flags.get("tone", "plain")', 't.flags["tnoe"]'))
    project.write("experiments/large.py", LARGE.replace("runs=2", "runs=1, flags={'tone': 'warm'}"))
    done = _exp(project, server, "--runs", "1")
    assert done.code == 2
    assert (
        "eval evals/geo.py::greeting reads t.flags['tnoe'], but experiment 'large' does not set it; experiments "
        "that set flags: large (tone)" in done.output
    )
