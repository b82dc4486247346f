"""`niceeval judge compare RUN --judge MODEL`: a run judged by a lenient judge, rescored under a strict one.

The local server scripts both judges by the model asked: the lenient one fails only rude replies, the strict one
also fails short ones. Ten labelled cases: five fine (labelled pass), two rude and three short (labelled fail).
The agent is the echo function, so every request the server sees is a judge's.
"""

from __future__ import annotations

import json
import math

import pytest
from scipy.stats import ttest_rel

from niceeval.store import Store
from niceeval.testing import LLMRequest, LLMServer, Reply

from ._project import Project

CONFIG = """\
from niceeval import define_config


def echo(message: str) -> str:
    return "echo: " + message


config = define_config(agent=echo, judge={"model": "openai/lenient"})
"""

EVALS = """\
from niceeval import define_eval

CASES = (
    [{"message": f"fine answer {i}", "expected_label": "pass"} for i in range(5)]
    + [{"message": f"rude answer {i}", "expected_label": "fail"} for i in range(2)]
    + [{"message": f"short answer {i}", "expected_label": "fail"} for i in range(3)]
)


@define_eval(cases=CASES)
async def answers(t):
    await t.send(t.case["message"])
    t.judge.rubric("Is the reply helpful and complete?")
"""

PASS_SCORE = {"lenient": 0.9, "strict": 0.8}
FAIL_SCORE = {"lenient": 0.2, "strict": 0.1}


def judges(request: LLMRequest) -> Reply:
    """`lenient` fails rude replies; `strict` fails rude and short ones."""
    who = "strict" if request.model.endswith("strict") else "lenient"
    reply = request.last_user_text
    failing = "rude" in reply or (who == "strict" and "short" in reply)
    score = FAIL_SCORE[who] if failing else PASS_SCORE[who]
    return Reply(data={"reason": f"{who}: {'no' if failing else 'yes'}", "pass": not failing, "score": score})


@pytest.fixture
def judged(project: Project, llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch, store_url: str) -> str:
    """The project's suite run, judged by the lenient judge; its id."""
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("OPENAI_BASE_URL", llm_server.base_url)
    llm_server.set_script(judges)
    project.write("niceeval.config.py", CONFIG)
    project.write("evals/answers.py", EVALS)
    done = project.run("--store", store_url)
    assert done.code == 0, done.output
    return str(done.report()["run_id"])


def kappa(both_pass: int, both_fail: int, first_only: int, second_only: int) -> float:
    """Cohen's kappa from the 2x2 table, by its definition."""
    n = both_pass + both_fail + first_only + second_only
    observed = (both_pass + both_fail) / n
    first, second = (both_pass + first_only) / n, (both_pass + second_only) / n
    chance = first * second + (1 - first) * (1 - second)
    return (observed - chance) / (1 - chance)


def wilson(k: int, n: int) -> tuple[float, float]:
    z = 1.959963984540054
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half, centre + half


def test_a_strict_judge_against_a_lenient_one(project: Project, judged: str, store_url: str) -> None:
    # lenient passes 5 fine + 3 short, strict only the 5 fine: 7 of 10 agree, 3 flips pass -> fail
    reference_kappa = kappa(both_pass=5, both_fail=2, first_only=3, second_only=0)  # = (0.7 - 0.5) / 0.5
    low, high = wilson(7, 10)
    assert (round(reference_kappa, 6), round(low, 4), round(high, 4)) == (0.4, 0.3968, 0.8922)
    compared = project.cli("judge", "compare", judged, "--judge", "openai/strict", "--json", "--store", store_url)
    assert compared.code == 0, compared.output
    data = json.loads(compared.stdout)
    (rubric,) = data["assertions"]
    assert rubric["assertion"] == "rubric('Is the reply helpful and complete?')"
    assert (rubric["verdicts"], rubric["inconclusive"], rubric["pass_to_fail"], rubric["fail_to_pass"]) == (10, 0, 3, 0)
    assert rubric["agreement"] == pytest.approx(0.7)
    assert rubric["kappa"] == pytest.approx(reference_kappa)
    assert (rubric["agreement_low"], rubric["agreement_high"]) == pytest.approx((low, high))
    before, after = (8 * 0.9 + 2 * 0.2) / 10, (5 * 0.8 + 5 * 0.1) / 10
    assert (rubric["before_mean_score"], rubric["after_mean_score"]) == pytest.approx((before, after))
    assert rubric["score_change"] == pytest.approx(after - before)
    assert (rubric["before_models"], rubric["after_models"]) == (["openai/lenient"], ["openai/strict"])
    stored, new = data["labels"]
    # labels: 5 pass, 5 fail. lenient says pass to 3 labelled fail; strict matches every label
    assert (stored["judge"], stored["agreement"], stored["kappa"]) == (
        "stored",
        pytest.approx(0.7),
        pytest.approx(kappa(5, 2, 0, 3)),
    )
    assert (new["judge"], new["agreement"], new["kappa"]) == ("new", 1.0, 1.0)
    assert data["failed"] is False
    with Store.open(store_url) as store:
        rescore = store.run(data["rescore"]).run
    assert (rescore.kind, rescore.parent_id) == ("rescore", judged)


def test_the_report_in_words_and_the_agreement_gate(project: Project, judged: str, store_url: str) -> None:
    compared = project.cli(
        "judge", "compare", judged, "--judge", "openai/strict", "--min-agreement", "0.9", "--store", store_url
    )
    assert compared.code == 1, compared.output
    lines = compared.stdout.splitlines()
    assert lines[0].startswith(f"judge compare: suite run {judged} (judged by openai/lenient) rescored as ")
    assert lines[0].endswith(" under openai/strict")
    # the scores' paired differences: -0.1 for the 5 fine and 2 rude replies, 0.1 - 0.9 for the 3 short ones
    reference = ttest_rel([0.8] * 5 + [0.1] * 5, [0.9] * 5 + [0.2] * 2 + [0.9] * 3)
    assert round(float(reference.pvalue), 4) == 0.0176
    assert lines[1] == (
        "  rubric('Is the reply helpful and complete?'): agreement 70% (95% CI 40%-89%) over 10 verdicts, kappa "
        f"0.40, 3 pass->fail, 0 fail->pass; mean score 0.76 -> 0.45, -0.31 (95% -0.55 to -0.07), "
        f"p={reference.pvalue:.3g} (paired t)"
    )
    assert lines[2:5] == [
        "against the human labels (10 labelled verdicts):",
        "  stored judge (openai/lenient): agreement 70% (95% CI 40%-89%) over 10 verdicts, kappa 0.40",
        "  new judge (openai/strict): agreement 100% (95% CI 72%-100%) over 10 verdicts, kappa 1.00",
    ]
    assert lines[5] == (
        "FAILED: rubric('Is the reply helpful and complete?'): agreement 70% is under --min-agreement 90%"
    )
    passing = project.cli(
        "judge", "compare", judged, "--judge", "openai/strict", "--min-agreement", "0.7", "--store", store_url
    )
    assert passing.code == 0, passing.output
    assert passing.stdout.splitlines()[-1] == "every judge assertion agrees at least --min-agreement 70%"


def test_a_run_without_judge_verdicts_has_nothing_to_compare(project: Project, store_url: str) -> None:
    project.write("evals/plain.py", "from niceeval import define_eval\n\n@define_eval\nasync def plain(t):\n    pass\n")
    run = str(project.run("--store", store_url).report()["run_id"])
    compared = project.cli("judge", "compare", run, "--judge", "openai/strict", "--store", store_url)
    assert compared.code == 2
    assert "has no judge verdict the rescore could pair: nothing to compare" in compared.stderr
