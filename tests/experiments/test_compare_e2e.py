"""End to end: two experiments differing only in model run one suite against the offline server (`niceeval exp`),
then `niceeval exp compare` shows both with their intervals, pairs them on their shared cases and marks the front."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from niceeval.testing import LLMRequest, LLMServer, Reply
from tests.e2e._project import make_project

pytestmark = pytest.mark.slow

CONFIG = """\
from niceeval import define_config
from niceeval.agents import openai_agent

config = define_config(
    agent=openai_agent("openai/base-model"),
    pricing={
        "openai/small": {"input_per_mtok": 1.0, "output_per_mtok": 4.0},
        "openai/large": {"input_per_mtok": 10.0, "output_per_mtok": 40.0},
    },
)
"""

EVALS = """\
from niceeval import define_eval
from niceeval.expect import includes

CITIES = ["Paris", "Rome", "Madrid", "Berlin", "Vienna", "Lisbon", "Oslo", "Dublin", "Prague", "Warsaw"]


@define_eval(cases=[{"id": city, "city": city} for city in CITIES])
async def capital(t):
    await t.send(f"Which city is {t.case['city']}?")
    t.check(t.reply, includes(t.case["city"]))
"""


def reply(request: LLMRequest) -> Reply:
    """The large model names every city; the small one only the first three."""
    city = request.last_user_text.split()[-1].rstrip("?")
    known = request.model == "large" or city in ("Paris", "Rome", "Madrid")
    return Reply(text=f"That is {city}." if known else "A city in Europe.")


def test_two_models_compare_with_intervals_paired_tests_and_the_front(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    project.write("niceeval.config.py", CONFIG)
    project.write("evals/geo.py", EVALS)
    for size in ("small", "large"):
        project.write(f"experiments/{size}.py", "from niceeval import define_experiment\n\n"
                      f"experiment = define_experiment(model='openai/{size}')\n")  # fmt: skip
    with LLMServer(reply) as server:
        env = {"OPENAI_API_KEY": "test-key", "OPENAI_BASE_URL": server.base_url}
        ran = project.cli("exp", env=env, timeout=120)
        assert ran.code == 1, ran.stdout + ran.stderr  # the small model fails 7 cases
        assert len(server.requests) == 20
    done = project.cli("exp", "compare", "small", "large", "--json")
    assert done.code == 0, done.stdout + done.stderr
    data = json.loads(done.stdout)
    small, large = data["setups"]
    assert (small["name"], small["experiment"], small["cases"]) == ("small", "small", 10)
    assert (small["pass_rate"]["value"], large["pass_rate"]["value"]) == (0.3, 1.0)
    assert small["pass_rate"]["low"] < 0.3 < small["pass_rate"]["high"]
    assert large["cost_per_run"]["value"] > 5 * small["cost_per_run"]["value"]  # 10x the price, longer replies
    assert small["cost_per_run"]["low"] <= small["cost_per_run"]["value"] <= small["cost_per_run"]["high"]
    assert small["latency_p50"]["low"] is not None and large["latency_p95"]["high"] is not None
    (pair,) = data["pairs"]
    assert (pair["shared_cases"], pair["suite"]["test"]) == (10, "mcnemar")
    assert pair["suite"]["p_value"] == pytest.approx(2 / 2**7)  # 7 flips, all one way
    assert pair["relation"] == "a trade-off"  # better on pass rate, worse on cost: both beyond noise
    assert "large better on pass rate (+70 pts" in pair["relation_line"] and "worse on cost (+" in pair["relation_line"]
    assert data["front"] == ["small", "large"]
    table = project.cli("exp", "compare", "small", "large")
    assert table.code == 0 and "small vs large over 10 shared cases: a trade-off" in table.stdout
