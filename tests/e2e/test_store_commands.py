"""`niceeval diff`, `export` and `gc` on a real store, and two `niceeval run` processes writing one store at once."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from niceeval.store import Store

from ._project import Project

VERSIONED = """\
import os

from niceeval import define_eval
from niceeval.expect import includes, similarity

BROKEN = os.environ.get("BREAK", "")


@define_eval
async def steady(t):
    t.check("ok", includes("ok"))


@define_eval
async def fragile(t):
    t.check("bad" if "fragile" in BROKEN else "ok", includes("ok"))


@define_eval
async def drifting(t):
    t.check("abcdefghij" if "drifting" not in BROKEN else "abcdexxxxx", similarity("abcdefghij").at_least(0.4))
"""


@pytest.fixture
def versioned(project: Project) -> Project:
    project.write("evals/v.py", VERSIONED)
    return project


def run_id(project: Project, store_url: str, *, broken: str = "") -> str:
    result = project.run("--store", store_url, env={"BREAK": broken})
    return str(result.report()["run_id"])


def test_one_flip_of_one_run_is_noise_unless_it_exceeds_max_drop(versioned: Project, store_url: str) -> None:
    base = run_id(versioned, store_url)
    head = run_id(versioned, store_url, broken="fragile,drifting")
    diff = versioned.cli("diff", base, head, "--store", store_url)
    assert diff.code == 0, diff.output
    assert (
        "noise      evals/v.py::fragile  passed -> failed  1/1 -> 0/1 runs passed: -1.00 (95% -1.00 to +0.12), "
        "1 vs 1 runs: not enough to tell"
    ) in diff.stdout
    assert "score      evals/v.py::drifting  similarity  1.00 -> 0.50 (-0.50)" in diff.stdout
    assert "suite pass rate over 3 shared evals: 100% -> 67%, -0.33" in diff.stdout
    assert "3 shared cases: not enough to tell" in diff.stdout
    assert (
        "  noise      mean score similarity over 1 shared case: 1.00 -> 0.50, -0.50, 1 shared case: not enough to tell"
    ) in diff.stdout.splitlines()
    assert diff.stdout.rstrip().endswith("no regression beyond noise at alpha 0.05 (2 changes within noise)")
    gated = versioned.cli("diff", base, head, "--max-drop", "0.2", "--store", store_url)
    assert gated.code == 1, gated.output
    assert (
        "REGRESSED: suite pass rate dropped by 0.333, more than --max-drop 0.2; "
        "mean score similarity dropped by 0.500, more than --max-drop 0.2"
    ) in gated.stdout


CASES = """\
import os

from niceeval import define_eval
from niceeval.expect import includes


@define_eval(cases=[{"q": i} for i in range(12)])
async def answers(t):
    t.check("bad" if os.environ.get("BREAK") else "ok", includes("ok"))
"""


def test_a_drop_across_many_cases_is_a_significant_regression(project: Project, store_url: str) -> None:
    project.write("evals/c.py", CASES)
    base = run_id(project, store_url)
    head = run_id(project, store_url, broken="yes")
    diff = project.cli("diff", base, head, "--store", store_url)
    assert diff.code == 1, diff.output
    assert "suite pass rate over 12 shared evals: 100% -> 0%, -1.00" in diff.stdout
    assert "p=0.000488 (mcnemar)" in diff.stdout
    assert "REGRESSED: suite pass rate: -1.00" in diff.stdout
    data = json.loads(project.cli("diff", base, head, "--json", "--store", store_url).stdout)
    assert data["regressed"] is True and data["suite"]["test"] == "mcnemar" and data["suite"]["cases"] == 12


def test_diff_judges_both_runs_by_the_heads_rule(versioned: Project, store_url: str) -> None:
    base = str(versioned.run("--store", store_url, "--strict").report()["run_id"])
    head = run_id(versioned, store_url)
    diff = versioned.cli("diff", base, head, "--store", store_url)
    assert diff.code == 0, diff.output
    assert "both judged with --min-pass-rate 1" in diff.stdout
    assert "differs: flags: run --store" in diff.stdout and "--strict" in diff.stdout
    assert "differs: verdict rule: --strict --min-pass-rate 1 -> --min-pass-rate 1" in diff.stdout
    assert "noise      " not in diff.stdout and "REGRESSED" not in diff.stdout


@pytest.mark.parametrize("alpha", ["0", "1.5", "x"])
def test_alpha_outside_zero_one_exits_2_naming_the_flag(versioned: Project, store_url: str, alpha: str) -> None:
    diff = versioned.cli("diff", "a", "b", "--alpha", alpha, "--store", store_url)
    assert diff.code == 2
    assert "--alpha" in diff.stderr


def test_a_run_compared_with_itself_is_an_error(versioned: Project, store_url: str) -> None:
    run = run_id(versioned, store_url)
    diff = versioned.cli("diff", run, run, "--store", store_url)
    assert diff.code == 2
    assert "both name" in diff.stderr


def test_diff_without_regressions_exits_0(versioned: Project, store_url: str) -> None:
    base = run_id(versioned, store_url, broken="fragile")
    head = run_id(versioned, store_url)
    diff = versioned.cli("diff", base, head, "--store", store_url)
    assert diff.code == 0, diff.output
    assert "noise      evals/v.py::fragile  failed -> passed  0/1 -> 1/1 runs passed" in diff.stdout


def test_diff_as_json_names_new_and_gone_evals(versioned: Project, store_url: str) -> None:
    base = run_id(versioned, store_url)
    head = versioned.run("--store", store_url, "-k", "steady").report()["run_id"]
    diff = versioned.cli("diff", base, head, "--json", "--store", store_url)
    data = json.loads(diff.stdout)
    gone = ["evals/v.py::drifting", "evals/v.py::fragile"]
    assert (data["new"], data["gone"], data["regressed"]) == ([], gone, False)


def test_export_writes_the_reports_the_run_wrote(versioned: Project, store_url: str) -> None:
    ran = versioned.run("--store", store_url, env={"BREAK": "fragile"})
    target_json, target_xml = versioned.out / "exported.json", versioned.out / "exported.xml"
    exported = versioned.cli(
        "export", ran.report()["run_id"], "--json", str(target_json), "--junit", str(target_xml), "--store", store_url
    )
    assert exported.code == 0, exported.output
    written = json.loads(target_json.read_text())
    original = ran.report()
    assert written["run_id"] == original["run_id"]
    assert written["summary"] == original["summary"]
    assert [e["runs"] for e in written["evals"]] == [e["runs"] for e in original["evals"]]
    assert target_xml.read_text().count("<failure") == ran.junit_text.count("<failure")  # type: ignore[union-attr]


def test_export_needs_a_report_to_write(versioned: Project, store_url: str) -> None:
    run_id(versioned, store_url)
    exported = versioned.cli("export", "latest", "--store", store_url)
    assert exported.code == 2 and "--json PATH, --junit PATH and/or --html PATH" in exported.stderr


def test_gc_keeps_the_latest_suite_runs(versioned: Project, store_url: str) -> None:
    ids = [run_id(versioned, store_url) for _ in range(3)]
    collected = versioned.cli("gc", "--keep", "1", "--store", store_url)
    assert collected.code == 0
    assert "deleted 2 suite runs (6 eval runs)" in collected.stdout
    with Store.open(store_url) as store:
        assert [r.id for r in store.runs()] == ids[-1:]
        assert store.history("evals/v.py::steady") == store.history("evals/v.py::steady")[:1]


@pytest.mark.slow
def test_two_runs_writing_one_store_at_once_both_complete(project: Project, store_url: str) -> None:
    body = "".join(f"\n@define_eval\nasync def e{i}(t):\n    await anyio.sleep(0.01)\n" for i in range(60))
    project.write("evals/many.py", "import anyio\nfrom niceeval import define_eval\n" + body)
    env = {k: v for k, v in os.environ.items() if not k.startswith("NICEEVAL")}
    command = [sys.executable, "-m", "niceeval.cli", "run", "--store", store_url, "--concurrency", "4"]
    processes = [
        subprocess.Popen(command, cwd=project.root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    outputs = [p.communicate(timeout=120) for p in processes]
    assert [p.returncode for p in processes] == [0, 0], outputs
    assert all("not stored" not in err for _, err in outputs)
    with Store.open(store_url) as store:
        runs = store.runs()
        assert len(runs) == 2
        assert [(r.status, r.runs_done, r.passed) for r in runs] == [("finished", 60, 60)] * 2


BREAKER = """\
import os
import time

from niceeval import define_eval
from sqlalchemy import create_engine, text


@define_eval
async def a_first(t):
    pass


@define_eval
def b_breaks_the_store(t):
    url = os.environ["NICEEVAL_STORE"]
    engine = create_engine(url)
    deadline = time.monotonic() + 30
    with engine.connect() as conn:  # wait until the first run is in the store, then pull it away
        while not conn.execute(text("select count(*) from eval_runs")).scalar():
            assert time.monotonic() < deadline, "the first run never reached the store"
            conn.rollback()
            time.sleep(0.01)
    engine.dispose()
    if url.startswith("sqlite"):
        with engine.begin() as conn:
            for table in ("judge_calls", "assertions", "events", "turns", "eval_runs"):
                conn.execute(text("drop table " + table))
        engine.dispose()  # its connection closed now (Python 3.13 warns of one left to the collector)
    else:
        admin = create_engine(engine.url.set(database="postgres"), isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(text(f'drop database "{engine.url.database}" with (force)'))
        admin.dispose()


@define_eval
async def c_after(t):
    pass


@define_eval
async def d_after(t):
    pass
"""


def test_a_store_going_away_mid_run_warns_and_keeps_the_reports(project: Project, store_url: str) -> None:
    project.write("evals/breaker.py", BREAKER)
    result = project.run("--concurrency", "1", env={"NICEEVAL_STORE": store_url})
    assert result.code == 0, result.output
    assert result.report()["summary"]["passed"] == 4  # every run reported
    assert "3 of 4 runs were not stored in the results store" in result.stderr
    assert "stored as run" not in result.stdout


GRADED = """\
import os

from niceeval import define_eval
from niceeval.expect import similarity


@define_eval(cases=[{"q": i} for i in range(10)])
async def answers(t):
    reply = "abcdefghij"[: 10 - t.case["q"] % 3] if not os.environ.get("BREAK") else "abcdefgxyz"
    t.check(reply, similarity("abcdefghij").at_least(0.5))
"""


def test_a_score_drop_across_many_cases_fails_diff_and_the_baseline_gate(project: Project, store_url: str) -> None:
    project.write("evals/g.py", GRADED)
    base = run_id(project, store_url)
    head = run_id(project, store_url, broken="yes")  # every case still passes its gate: only the scores dropped
    diff = project.cli("diff", base, head, "--store", store_url)
    assert diff.code == 1, diff.output
    assert "suite pass rate over 10 shared evals: 100% -> 100%" in diff.stdout
    line = next(x for x in diff.stdout.splitlines() if "mean score similarity" in x)
    assert line.startswith("  REGRESSED  mean score similarity over 10 shared cases: 0.91 -> 0.70, -0.21 (95% ")
    assert "REGRESSED: score similarity: -0.21" in diff.stdout
    data = json.loads(project.cli("diff", base, head, "--json", "--store", store_url).stdout)
    (score,) = data["mean_scores"]
    assert (score["assertion"], score["cases"], score["change"], score["regressed"]) == (
        "similarity", 10, "regression", True,
    )  # fmt: skip
    assert score["p_value"] < 0.001 and score["q_value"] < 0.05 and data["regressed"] is True
    gated = project.run("--store", store_url, "--baseline", base, env={"BREAK": "yes"})
    assert gated.code == 1, gated.output
    assert "REGRESSED: score similarity: -0.21" in gated.stdout


SOURCED = """\
import os

from niceeval import define_eval
from niceeval.expect import includes


@define_eval(cases=[{"document": f"doc{d}", "q": q} for d in range(3) for q in range(4)], cluster="document")
async def answers(t):
    broken = os.environ.get("BREAK") and t.case["document"] == "doc0"
    t.check("bad" if broken else "ok", includes("ok"))
"""


def test_diff_counts_the_clusters_a_real_run_stored(project: Project, store_url: str) -> None:
    project.write("evals/s.py", SOURCED)
    base = run_id(project, store_url)
    head = run_id(project, store_url, broken="yes")  # one document's four questions fail: one source of evidence
    diff = project.cli("diff", base, head, "--store", store_url)
    assert diff.code == 0, diff.output
    assert (
        "suite pass rate over 12 shared evals in 3 clusters: 100% -> 67%, -0.33 (95% -1.00 to +1.00), "
        "3 shared cases: not enough to tell"
    ) in diff.stdout
    data = json.loads(project.cli("diff", base, head, "--json", "--store", store_url).stdout)
    assert (data["suite"]["test"], data["suite"]["cases"], data["suite"]["clusters"]) == ("paired t", 12, 3)
