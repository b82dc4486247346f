"""`niceeval diff` weighs what a change costs: the agent's cost per eval run and p50/p95 latency, each with its
paired bootstrap interval, the `--max-cost-increase` / `--max-latency-increase` gates and the one-line verdict."""

from __future__ import annotations

import json

import pytest

from ._project import Project

CONFIG = """\
import os
import time

from niceeval import define_config
from niceeval.agents import FunctionSession


def shop(message: str, session: FunctionSession) -> str:
    time.sleep(float(os.environ.get("TURN_SECONDS", "0")))
    scale = float(os.environ.get("COST_SCALE", "1"))
    session.usage("openai/shop", input_tokens=100, output_tokens=20, cost=0.001 * scale)
    return "ok: " + message


config = define_config(agent=shop)
"""

EVALS = """\
from niceeval import define_eval
from niceeval.expect import includes


@define_eval(cases=[{"q": f"question {i}"} for i in range(8)])
async def answers(t):
    await t.send(t.case["q"])
    t.check(t.reply, includes("ok"))
"""


@pytest.fixture
def shop(project: Project) -> Project:
    project.write("niceeval.config.py", CONFIG)
    project.write("evals/shop.py", EVALS)
    return project


def run_id(project: Project, store_url: str, **env: str) -> str:
    done = project.run("--store", store_url, env=env)
    assert done.code == 0, done.output
    return str(done.report()["run_id"])


def test_the_same_pass_rate_at_double_the_cost_is_worse_on_cost(shop: Project, store_url: str) -> None:
    base = run_id(shop, store_url)
    head = run_id(shop, store_url, COST_SCALE="2")
    diff = shop.cli("diff", base, head, "--store", store_url)
    assert diff.code == 0, diff.output
    assert "suite pass rate over 8 shared evals: 100% -> 100%" in diff.stdout
    assert "  worse      cost per eval run: $0.0010 -> $0.0020, +100% (95% CI +100% to +100%)" in diff.stdout
    assert "worse on cost (+100%, 95% CI +100% to +100%)" in diff.stdout
    assert diff.stdout.rstrip().endswith("no regression beyond noise at alpha 0.05")
    gated = shop.cli("diff", base, head, "--max-cost-increase", "10%", "--store", store_url)
    assert gated.code == 1, gated.output
    assert (
        "REGRESSED: cost per eval run rose +100% (95% CI +100% to +100%), more than --max-cost-increase 10% even at "
        "the interval's low end"
    ) in gated.stdout
    data = json.loads(shop.cli("diff", base, head, "--json", "--max-cost-increase", "10%", "--store", store_url).stdout)
    (cost,) = [u for u in data["usage"] if u["measure"] == "cost per eval run"]
    assert (cost["base"], cost["head"], cost["relative"], cost["change"]) == pytest.approx((0.001, 0.002, 1.0, "worse"))
    assert data["verdict"] in ("worse", "a trade-off")  # latency moves by chance between two runs of a function
    assert "worse on cost (+100%, 95% CI +100% to +100%)" in data["verdict_line"]
    assert (data["max_cost_increase"], data["regressed"]) == (0.1, True)


def test_a_cost_within_the_limit_passes_the_gate(shop: Project, store_url: str) -> None:
    base = run_id(shop, store_url)
    head = run_id(shop, store_url, COST_SCALE="1.05")
    diff = shop.cli("diff", base, head, "--max-cost-increase", "10", "--store", store_url)
    assert diff.code == 0, diff.output
    assert "cost per eval run: $0.0010 -> $0.0011, +5% (95% CI +5% to +5%)" in diff.stdout
    assert diff.stdout.rstrip().endswith("no regression beyond noise at alpha 0.05 or past --max-cost-increase 10%")


def test_slower_turns_fail_the_latency_gate(shop: Project, store_url: str) -> None:
    base = run_id(shop, store_url, TURN_SECONDS="0.02")
    head = run_id(shop, store_url, TURN_SECONDS="0.2")
    diff = shop.cli("diff", base, head, "--max-latency-increase", "20%", "--store", store_url)
    assert diff.code == 1, diff.output
    assert "REGRESSED: p50 latency rose +" in diff.stdout and "; p95 latency rose +" in diff.stdout
    assert "more than --max-latency-increase 20% even at the interval's low end" in diff.stdout
    assert "worse on p50 latency (+" in diff.stdout


def test_run_baseline_gates_on_cost_too(shop: Project, store_url: str) -> None:
    base = run_id(shop, store_url)
    head = shop.run("--store", store_url, "--baseline", base, "--max-cost-increase", "10%", env={"COST_SCALE": "2"})
    assert head.code == 1, head.output
    assert "worse on cost (+100%, 95% CI +100% to +100%)" in head.stdout
    assert "REGRESSED: cost per eval run rose +100%" in head.stdout


@pytest.mark.parametrize("limit", ["ten", "-5%"])
def test_a_limit_that_is_no_percentage_exits_2_naming_the_flag(shop: Project, store_url: str, limit: str) -> None:
    diff = shop.cli("diff", "a", "b", "--max-cost-increase", limit, "--store", store_url)
    assert diff.code == 2
    assert "--max-cost-increase" in diff.stderr
