"""t.judge.similar: cosine similarity of embeddings through an OpenAI-compatible /embeddings (the local server's
deterministic vectors), with the judges' inconclusive state, cache and cost."""

from __future__ import annotations

from pathlib import Path

import pytest

from niceeval._core.results import RunResult
from niceeval.testing import LLMServer
from niceeval.testing._embeddings import vector
from tests.datasets._helpers import Kept, run_project, write


def run_with_cache(root: Path) -> RunResult:
    """Like `run_project`, with the config's pricing and the judge cache on."""
    import anyio

    from niceeval._eval.config import load_config
    from niceeval._run.discovery import discover
    from niceeval._run.execute import ExecOptions
    from niceeval._run.plan import expand
    from niceeval._run.suite import SuiteOptions, run_suite

    config = load_config(root)
    plan = expand(discover(root, ["evals"]).evals, root=root)
    options = SuiteOptions(
        exec=ExecOptions(timeout=30, agent=config.agent, root=root, judge=config.judge, pricing=config.pricing)
    )
    kept = Kept()
    anyio.run(run_suite, plan.evals, [], options, [kept])
    (result,) = kept.results
    return result

CONFIG = """\
from niceeval import define_config
config = define_config(
    agent=lambda message: "The capital of France is Paris.",
    judge={{"model": "openai/judge"{extra}}},
    pricing={{"openai/text-embedding-3-small": {{"input_per_mtok": 0.02, "output_per_mtok": 0}}}},
)
"""

EVAL = """\
from niceeval import define_eval


@define_eval
async def capital(t):
    await t.send("Capital of France?")
    t.judge.similar("The capital of France is Paris.")
    t.judge.similar("Bananas are yellow fruit.").gate()
"""


def test_the_local_server_embeds_deterministically() -> None:
    assert vector("Paris is nice") == vector("paris IS nice")
    assert sum(a * b for a, b in zip(vector("a b c"), vector("a b c"), strict=True)) == pytest.approx(1.0)


def test_similar_scores_the_cosine_and_caches_it(
    tmp_path: Path, llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("OPENAI_BASE_URL", llm_server.base_url)
    write(tmp_path, "niceeval.config.py", CONFIG.format(extra=""))
    write(tmp_path, "evals/capital.py", EVAL)
    result = run_with_cache(tmp_path)
    same, other = result.assertions
    assert (same.name, same.state, same.severity, same.threshold) == (
        "similar('The capital of France is Paris.')",
        "passed",
        "soft",
        0.75,
    )
    assert same.score == pytest.approx(1.0)
    assert (other.state, other.severity) == ("failed", "gate") and other.score is not None and other.score < 0.75
    call = same.judge_calls[0]
    assert call.model == "openai/text-embedding-3-small" and call.input_tokens == 12
    assert call.cost == pytest.approx(12 * 0.02 / 1_000_000)
    assert call.messages[1] == {"role": "output", "content": "The capital of France is Paris."}
    assert result.outcome == "failed"
    again = run_with_cache(tmp_path)
    assert [a.judge_calls[0].cached for a in again.assertions] == [True, True]
    assert [a.score for a in again.assertions] == [same.score, other.score]


def test_the_embedding_model_comes_from_the_judge_settings(
    tmp_path: Path, llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("OPENAI_BASE_URL", llm_server.base_url)
    write(tmp_path, "niceeval.config.py", CONFIG.format(extra=', "embedding_model": "openai/house-embedder"'))
    write(tmp_path, "evals/capital.py", EVAL)
    (result,) = run_project(tmp_path).results
    assert {a.judge_calls[0].model for a in result.assertions} == {"openai/house-embedder"}
    assert result.assertions[0].judge_calls[0].cost is None  # no price for it: never a guessed 0


def test_without_a_key_similar_is_inconclusive(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    write(tmp_path, "niceeval.config.py", CONFIG.format(extra=""))
    write(tmp_path, "evals/capital.py", EVAL)
    (result,) = run_project(tmp_path).results
    assert [(a.state, a.score, a.cause) for a in result.assertions] == [("inconclusive", None, "no_api_key")] * 2
