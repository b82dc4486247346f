"""The results store on SQLite and PostgreSQL: records round-trip, suite runs list, resolve, diff and history."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from niceeval import AssertionResult, RunResult
from niceeval._core.assertion import JudgeCall
from niceeval._core.errors import ConfigError, ErrorInfo
from niceeval._core.events import ActionCalledEvent, MessageEvent, UsageEvent
from niceeval._core.outcome import Outcome
from niceeval._core.results import Spend
from niceeval._core.summary import PlannedEval
from niceeval.store import DiffOptions, RunNotFound, Store, SuiteRunStart
from niceeval.store._recorder import Recorder, SuiteEnd


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    with Store.open(store_url) as opened:
        yield opened


def planned(*ids: str, runs: int = 1) -> list[PlannedEval]:
    return [PlannedEval(id=i, file="evals/a.py", line=n + 1, tags=("t",), runs=runs) for n, i in enumerate(ids)]


def result(eval_id: str, outcome: Outcome = "passed", *, run_index: int = 0, score: float = 1.0) -> RunResult:
    return RunResult(
        eval_id=eval_id,
        file="evals/a.py",
        line=3,
        run_index=run_index,
        outcome=outcome,
        duration_s=0.25,
        assertions=[
            AssertionResult(
                name="includes('x')", severity="gate", score=score, threshold=1.0,
                state="passed" if score >= 1.0 else "failed", location="evals/a.py:5",
            )
        ],
    )  # fmt: skip


def full_result() -> RunResult:
    """A run with every kind of record: judge calls, events of each shape, an error, spend on both sides."""
    judged = AssertionResult(
        name="rubric",
        severity="soft",
        score=0.6,
        threshold=0.7,
        state="failed",
        reason="too curt",
        expected="polite",
        actual="k.",
        location="evals/a.py:9",
        optional=True,
        judge_calls=[
            JudgeCall(
                model="openai/gpt-x",
                messages=[{"role": "user", "content": "Judge: k."}],
                score=0.6,
                passed=False,
                reason="too curt",
                input_tokens=120,
                output_tokens=30,
                cache_read_tokens=4,
                cost=0.0012,
                latency=0.8,
            ),
            JudgeCall(model="anthropic/claude", cached=True, fallback=True, asked=False, cause="timeout"),
        ],
    )
    events = [
        MessageEvent(role="user", text="refund order 12", seq=0),
        ActionCalledEvent(name="lookup_order", input={"id": 12}, output={"status": "paid"}, seq=1),
        UsageEvent(model="openai/gpt-x", input_tokens=50, output_tokens=20, cache_read_tokens=3, cost=0.001, seq=2),
        MessageEvent(role="assistant", text="Refunded.", data={"intent": "refund"}, seq=3),
        MessageEvent(role="user", text="thanks", seq=4),
        MessageEvent(role="assistant", text="You're welcome", seq=5),
    ]
    return RunResult(
        eval_id="evals/a.py::refund",
        file="evals/a.py",
        line=7,
        run_index=1,
        outcome="failed",
        duration_s=1.5,
        error=ErrorInfo(type="ValueError", message="boom", location="evals/a.py:12", traceback="tb", kind="exception"),
        assertions=[judged],
        events=events,
        agent_spend=Spend(calls=1, tokens=70, cost=0.001),
        judge_spend=Spend(calls=1, tokens=150, cost=0.0012, cached=1, unpriced=["anthropic/claude"]),
    )


@contextmanager
def recording(store: Store) -> Iterator[Recorder]:
    """What writes suite runs into `store` (as the runner does)."""
    recorder = Recorder.of(store)
    try:
        yield recorder
    finally:
        recorder.close()


def record(store: Store, run_id: str, results: list[RunResult], *, plan: list[PlannedEval] | None = None) -> None:
    ids = list(dict.fromkeys(r.eval_id for r in results))
    with recording(store) as recorder:
        recorder.begin(SuiteRunStart(id=run_id, command=["niceeval", "run"]), plan or planned(*ids))
        recorder.add(run_id, results)
        recorder.finish(run_id, SuiteEnd(status="finished", exit_code=0, duration_s=1.0))


def test_a_run_reads_back_equal_to_what_was_written(store: Store) -> None:
    written = full_result()
    record(store, "run1", [written], plan=planned("evals/a.py::refund", runs=2))
    assert store.eval_run("run1", "evals/a.py::refund", 1) == written


def test_turns_record_what_was_sent_and_what_came_back(store: Store) -> None:
    from sqlalchemy import select

    from niceeval.store._schema import turns

    record(store, "run1", [full_result()], plan=planned("evals/a.py::refund", runs=2))
    with store.engine.connect() as conn:
        rows = conn.execute(select(turns).order_by(turns.c.position)).mappings().all()
    assert [(r["sent"], r["reply"], r["data"], r["first_seq"], r["last_seq"]) for r in rows] == [
        ("refund order 12", "Refunded.", {"intent": "refund"}, 0, 3),
        ("thanks", "You're welcome", None, 4, 5),
    ]


def test_a_replys_data_holding_nan_and_infinities_is_stored_with_them_null(store: Store) -> None:
    """JSON has no NaN: PostgreSQL's `json` refused the turn's text, and the whole run was not stored."""
    from sqlalchemy import select

    from niceeval.store._schema import turns

    events = [MessageEvent(role="user", text="how much?", seq=0),
              MessageEvent(role="assistant", text="n/a", data={"price": float("nan"), "range": [float("-inf"), 1.5]},
                           seq=1)]  # fmt: skip
    record(store, "run1", [result("a").model_copy(update={"events": events})])
    with store.engine.connect() as conn:
        assert conn.execute(select(turns.c.data)).scalars().all() == [{"price": None, "range": [None, 1.5]}]
    assert store.eval_run("run1", "a", 0).events[1].data == {"price": None, "range": [None, 1.5]}


def test_finished_suite_run_has_totals_counted_from_its_eval_runs(store: Store) -> None:
    record(store, "run1", [result("a"), result("b", "failed", score=0.0), result("c", "skipped"), full_result()])
    info = store.run("run1").run
    assert (info.status, info.passed, info.failed, info.skipped, info.runs_done) == ("finished", 1, 2, 1, 4)
    assert info.agent_tokens == 70 and info.judge_tokens == 150
    assert info.agent_cost == pytest.approx(0.001) and info.judge_cost == pytest.approx(0.0012)
    assert info.pass_rate == pytest.approx(1 / 3)


def test_an_unpriced_run_makes_the_suite_cost_unknown(store: Store) -> None:
    unpriced = result("a").model_copy(update={"agent_spend": Spend(calls=1, tokens=5, cost=None, unpriced=["x/y"])})
    record(store, "run1", [unpriced, result("b")])
    info = store.run("run1").run
    assert info.agent_cost is None and info.cost is None


def test_runs_are_listed_latest_first(store: Store) -> None:
    for run_id in ("first", "second", "third"):
        record(store, run_id, [result("a")])
    assert [r.id for r in store.runs()] == ["third", "second", "first"]
    assert [r.id for r in store.runs(limit=1, offset=1)] == ["second"]


def test_a_running_suite_run_counts_what_it_stored_so_far(store: Store) -> None:
    with recording(store) as recorder:
        recorder.begin(SuiteRunStart(id="live"), planned("a", "b"))
        recorder.add("live", [result("a")])
    info = store.runs()[0]
    assert (info.status, info.runs_done, info.runs_planned, info.passed) == ("running", 1, 2, 1)


def test_a_suite_run_is_found_by_unique_prefix_or_latest(store: Store) -> None:
    record(store, "abcd1234", [result("a")])
    record(store, "abce9999", [result("a")])
    assert store.resolve("abcd") == "abcd1234"
    assert store.resolve("latest") == "abce9999"


def test_ref_tilde_n_names_the_suite_run_n_before_in_the_runs_list(store: Store) -> None:
    for run_id in ("abcd1111", "abce2222", "abcf3333", "abcg4444"):
        record(store, run_id, [result("a")])
    listed = [r.id for r in store.runs()]
    assert listed == ["abcg4444", "abcf3333", "abce2222", "abcd1111"]
    assert [store.resolve(f"latest~{n}") for n in range(4)] == listed
    assert store.resolve("abcf~1") == "abce2222"  # a prefix, then back
    assert store.resolve("abce2222~1") == "abcd1111"
    assert store.run("latest~2").run.id == "abce2222"  # every read method takes it


def test_ref_tilde_n_past_the_first_run_says_how_many_there_are(store: Store) -> None:
    record(store, "abcd1111", [result("a")])
    record(store, "abce2222", [result("a")])
    with pytest.raises(RunNotFound, match=r"'latest~2' goes back 2 suite runs, but the results store holds 1 started"):
        store.resolve("latest~2")
    with pytest.raises(RunNotFound, match="no suite run 'zzzz'"):
        store.resolve("zzzz~1")


def test_an_ambiguous_prefix_asks_for_more_of_the_id(store: Store) -> None:
    record(store, "abcd1234", [result("a")])
    record(store, "abcd9999", [result("a")])
    with pytest.raises(RunNotFound, match="matches several"):
        store.resolve("abcd")


def test_an_unknown_run_says_how_to_list_runs(store: Store) -> None:
    with pytest.raises(RunNotFound, match="niceeval runs"):
        store.run("nope")


def test_run_detail_lists_eval_runs_in_plan_order(store: Store) -> None:
    plan = planned("z", "a", runs=2)
    with recording(store) as recorder:
        recorder.begin(SuiteRunStart(id="r"), plan)
        recorder.add("r", [result("a", run_index=1), result("z", run_index=1), result("a"), result("z", "failed")])
    detail = store.run("r")
    assert [(s.eval_id, s.run_index, s.outcome) for s in detail.eval_runs] == [
        ("z", 0, "failed"), ("z", 1, "passed"), ("a", 0, "passed"), ("a", 1, "passed"),
    ]  # fmt: skip
    assert [e.eval_id for e in detail.evals] == ["z", "a"]


def test_history_shows_an_eval_across_suite_runs_latest_first(store: Store) -> None:
    record(store, "old", [result("a", "failed", score=0.0)])
    record(store, "new", [result("a")])
    assert [(h.suite_run_id, h.outcome) for h in store.history("a")] == [("new", "passed"), ("old", "failed")]


def test_history_pages_through_suite_runs_and_stops_at_its_limit(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No index leads with eval_id: the history looks through suite runs newest first, a page at a time (two here)."""
    from niceeval.store import _read

    monkeypatch.setattr(_read, "_PAGE", 2)
    for n in range(7):  # "a" runs twice in s0, s3 and s6; "b" in every one
        runs = [result("a", run_index=0), result("a", "failed", run_index=1, score=0.0)] if n % 3 == 0 else []
        record(store, f"s{n}", [*runs, result("b")], plan=planned("a", runs=2) + planned("b") if runs else None)
    assert [(h.suite_run_id, h.run_index, h.outcome) for h in store.history("a")] == [
        ("s6", 0, "passed"), ("s6", 1, "failed"), ("s3", 0, "passed"), ("s3", 1, "failed"),
        ("s0", 0, "passed"), ("s0", 1, "failed"),
    ]  # fmt: skip
    assert [(h.suite_run_id, h.run_index) for h in store.history("a", limit=3)] == [("s6", 0), ("s6", 1), ("s3", 0)]
    assert [h.suite_run_id for h in store.history("b", limit=4)] == ["s6", "s5", "s4", "s3"]
    assert store.history("never") == []


def test_diff_finds_flips_new_and_gone_evals_and_moved_scores(store: Store) -> None:
    record(store, "base", [result("keeps"), result("breaks"), result("gone"), result("drifts", "scored", score=0.9)])
    record(store, "head", [result("keeps"), result("breaks", "failed", score=0.0), result("new"),
                           result("drifts", "scored", score=0.5)])  # fmt: skip
    diff = store.diff("base", "head", DiffOptions(threshold=0.1))
    assert [(c.eval_id, c.base, c.head, c.worse, c.change) for c in diff.changed] == [
        ("breaks", "passed", "failed", True, "noise")  # one run of one eval: not enough to tell
    ]
    assert (diff.new, diff.gone) == (["new"], ["gone"])
    assert [(s.eval_id, round(s.delta, 2)) for s in diff.scores] == [("breaks", -1.0), ("drifts", -0.4)]
    assert not diff.regressed


def test_diff_calls_a_drop_over_many_runs_a_regression(store: Store) -> None:
    plan = planned("a", "b", runs=12)
    with recording(store) as recorder:
        recorder.begin(SuiteRunStart(id="base", command=["niceeval", "run"]), plan)
        recorder.add("base", [result(e, run_index=i) for e in "ab" for i in range(12)])
        recorder.begin(SuiteRunStart(id="head", command=["niceeval", "run"]), plan)
        recorder.add("head", [result("a", run_index=i) for i in range(12)])
        recorder.add("head", [result("b", "failed", run_index=i) for i in range(12)])
    diff = store.diff("base", "head")
    assert [(c.eval_id, c.regressed, c.base_passes, c.head_passes) for c in diff.changed] == [("b", True, 12, 0)]
    assert diff.regressed and diff.reasons[0].startswith("b: -1.00")


def test_diff_of_a_run_with_itself_or_with_nothing_in_common_is_an_error(store: Store) -> None:
    record(store, "one", [result("a")])
    record(store, "other", [result("b")])
    with pytest.raises(ConfigError, match="both name one"):
        store.diff("one", "one")
    with pytest.raises(ConfigError, match="share no eval"):
        store.diff("one", "other")


def test_diff_of_a_run_that_only_improved_is_no_regression(store: Store) -> None:
    record(store, "base", [result("a", "failed", score=0.0)])
    record(store, "head", [result("a")])
    diff = store.diff("base", "head")
    assert [(c.base, c.head, c.regressed, c.change) for c in diff.changed] == [("failed", "passed", False, "noise")]
    assert not diff.regressed


def test_results_stream_every_eval_run_of_a_suite_run(store: Store) -> None:
    written = [result(f"e{i}", run_index=0) for i in range(450)]  # more than one chunk
    record(store, "big", written)
    assert sorted(r.eval_id for r in store.results("big")) == sorted(r.eval_id for r in written)


def keyed(name: str, score: float) -> RunResult:
    run = result("a", "scored", score=score)
    (only,) = run.assertions
    return run.model_copy(update={"assertions": [only.model_copy(update={"name": name, "key": "tone"})]})


def test_diff_matches_keyed_assertions_by_key_across_a_rename(store: Store) -> None:
    record(store, "base", [keyed("polite?", 0.9)])
    record(store, "head", [keyed("is the reply polite?", 0.4)])
    diff = store.diff("base", "head", DiffOptions(threshold=0.1))
    assert [(s.assertion, round(s.delta, 2)) for s in diff.scores] == [("[tone]", -0.5)]
    (stored,) = next(iter(store.results("head"))).assertions
    assert (stored.name, stored.key) == ("is the reply polite?", "tone")


def judged(eval_id: str, score: float, *, run_index: int = 0, name: str = "rubric('polite')") -> RunResult:
    run = result(eval_id, "passed" if score >= 0.5 else "scored", run_index=run_index)
    (only,) = run.assertions
    update = {"name": name, "severity": "soft", "score": score, "threshold": 0.5}
    return run.model_copy(update={"assertions": [only.model_copy(update=update)]})


def two_similarities(eval_id: str, paris: float, rome: float) -> RunResult:
    """An eval scored by `similarity('Paris')` and `similarity('Rome')`: one assertion by kind, two by name."""
    run = judged(eval_id, paris, name="similarity('Paris')")
    (paris_found,) = run.assertions
    rome_found = paris_found.model_copy(update={"name": "similarity('Rome')", "score": rome})
    return run.model_copy(update={"assertions": [paris_found, rome_found]})


def test_diff_pools_one_evals_assertions_of_one_kind_and_lists_each_by_name(store: Store) -> None:
    old = [(0.9, 0.7), (0.8, 0.8), (0.6, 1.0), (0.9, 0.9), (0.7, 0.5), (0.8, 0.6), (1.0, 0.8)]
    new = [(0.9, 0.1), (0.8, 0.3), (0.6, 0.2), (0.9, 0.4), (0.7, 0.0), (0.8, 0.2), (1.0, 0.3)]
    record(store, "base", [two_similarities(f"c{i}", p, r) for i, (p, r) in enumerate(old)])
    record(store, "head", [two_similarities(f"c{i}", p, r) for i, (p, r) in enumerate(new)])
    diff = store.diff("base", "head", DiffOptions(threshold=0.5))
    (similarity,) = diff.mean_scores  # one kind: each case's mean over both assertions is what is paired
    assert (similarity.assertion, similarity.cases) == ("similarity", 7)
    assert (similarity.base_mean, similarity.head_mean) == pytest.approx(
        (sum(p + r for p, r in old) / 14, sum(p + r for p, r in new) / 14)
    )
    assert [(c.eval_id, c.assertion, c.base, c.head) for c in diff.scores] == [
        ("c0", "similarity('Rome')", 0.7, 0.1), ("c2", "similarity('Rome')", 1.0, 0.2),
    ]  # fmt: skip  # moves of exactly 0.5 are not over the threshold


def judged_by(eval_id: str, *models: str) -> RunResult:
    """A run whose one assertion asked each of `models`."""
    run = judged(eval_id, 0.8)
    (found,) = run.assertions
    calls = [JudgeCall(model=model, score=0.8, passed=True, reason="fine") for model in models]
    return run.model_copy(update={"assertions": [found.model_copy(update={"judge_calls": calls})]})


def test_diff_names_the_judge_models_that_differ_closed_or_running(store: Store) -> None:
    record(store, "base", [judged_by("c0", "openai/gpt-x"), judged_by("c1", "openai/gpt-x", "anthropic/claude")])
    record(store, "head", [judged_by("c0", "openai/gpt-y"), judged_by("c1")])
    with recording(store) as recorder:
        recorder.begin(SuiteRunStart(id="live", command=["niceeval", "run"]), planned("c0", "c1"))
        recorder.add("live", [judged_by("c0", "openai/gpt-y", "openai/gpt-y"), judged_by("c1")])
        for head in ("head", "live"):  # a closed run's models are read from its kept tally, a running one's calls
            (models,) = [d for d in store.diff("base", head).differences if d.what == "judge models"]
            assert (models.base, models.head) == ("anthropic/claude, openai/gpt-x", "openai/gpt-y")
    record(store, "unjudged", [judged("c0", 0.8), judged("c1", 0.8)])
    (models,) = [d for d in store.diff("base", "unjudged").differences if d.what == "judge models"]
    assert models.head == "none"


def priced(run: RunResult, cost: float) -> RunResult:
    """`run` with the agent's spend: one call costing `cost`."""
    return run.model_copy(update={"agent_spend": Spend(calls=1, tokens=100, cost=cost)})


def test_diff_tests_each_scored_assertion_over_the_shared_cases(store: Store) -> None:
    from scipy.stats import ttest_rel

    old = [0.9, 0.8, 0.85, 0.95, 0.9, 0.8, 0.75, 0.9]
    new = [0.7, 0.65, 0.8, 0.8, 0.75, 0.7, 0.6, 0.8]
    plan = planned(*(f"c{i}" for i in range(8)), runs=2)
    # two runs per case: the case's mean score is what is paired (0.05 either side of it)
    record(store, "base", [judged(f"c{i}", v + d, run_index=r) for i, v in enumerate(old)
                           for r, d in enumerate((0.05, -0.05))], plan=plan)  # fmt: skip
    record(store, "head", [judged(f"c{i}", v, run_index=r, name="rubric('kind')") for i, v in enumerate(new)
                           for r in range(2)] + [judged("c9", 0.1)], plan=plan)  # fmt: skip
    diff = store.diff("base", "head")
    (rubric,) = diff.mean_scores  # named by kind: the argument changed, the assertion is the same
    reference = ttest_rel(new, old)
    assert (rubric.assertion, rubric.cases, rubric.change, rubric.regressed) == ("rubric", 8, "regression", True)
    assert (rubric.clusters, rubric.over) == (8, "8 shared cases")
    assert rubric.p_value == pytest.approx(reference.pvalue)
    assert (rubric.base_mean, rubric.head_mean) == pytest.approx((sum(old) / 8, sum(new) / 8))
    assert diff.changed == [] and diff.regressed
    assert diff.reasons == [f"score rubric: {rubric.evidence} (q={rubric.q_value:.3g})"]
    assert diff.describe()["mean_scores"][0]["p_value"] == rubric.p_value


def test_diff_lists_a_score_move_on_few_cases_as_not_enough_to_tell(store: Store) -> None:
    record(store, "base", [judged("a", 0.9), judged("b", 0.9)])
    record(store, "head", [judged("a", 0.5), judged("b", 0.6)])
    (rubric,) = store.diff("base", "head").mean_scores
    assert (rubric.p_value, rubric.note, rubric.change, rubric.regressed) == (
        None, "2 shared cases: not enough to tell", "noise", False,
    )  # fmt: skip
    gated = store.diff("base", "head", DiffOptions(max_drop=0.3))
    assert gated.mean_scores[0].regressed
    assert gated.reasons == ["mean score rubric dropped by 0.350, more than --max-drop 0.3"]


def test_a_gate_scoring_only_0_or_1_gets_no_score_test_of_its_own(store: Store) -> None:
    record(store, "base", [result("a"), result("b"), result("c", score=1.0)])
    record(store, "head", [result("a", "failed", score=0.0), result("b"), result("c")])
    assert store.diff("base", "head").mean_scores == []  # a, b: pass or fail, weighed by the pass-rate tests
    record(store, "graded", [result("a", "failed", score=0.0), result("b"), result("c", "failed", score=0.6)])
    (includes,) = store.diff("base", "graded").mean_scores  # c scored between 0 and 1 on one side: graded
    assert (includes.assertion, includes.cases, includes.base_mean) == ("includes", 3, 1.0)


def test_the_documented_diff_json_has_every_field_diff_writes(store: Store) -> None:
    import json
    import re
    from pathlib import Path

    page = (Path(__file__).resolve().parents[2] / "docs" / "json-report.md").read_text(encoding="utf-8")
    block = page.split("## `niceeval diff BASE HEAD --json`")[1].split("```jsonc\n")[1].split("```")[0]
    documented = json.loads(re.sub(r"//[^\n]*", "", block))
    record(store, "base", [priced(judged(f"c{i}", 0.9), 0.001) for i in range(3)] + [result("d")])
    record(store, "head", [priced(judged(f"c{i}", 0.5), 0.002) for i in range(3)] + [result("d", "failed", score=0.0)])
    written = store.diff("base", "head").describe()
    assert documented.keys() == written.keys()
    for key in ("changed", "scores", "mean_scores", "usage"):
        assert documented[key][0].keys() == written[key][0].keys(), key
    assert documented["suite"].keys() == written["suite"].keys()


def clustered(*ids: str, cluster: dict[str, str | None]) -> list[PlannedEval]:
    return [PlannedEval(id=i, file="evals/a.py", line=1, runs=1, cluster=cluster[i]) for i in ids]


DOC_QUESTIONS = [f"doc{d}-q{q}" for d in range(3) for q in range(10)]


def test_each_planned_evals_cluster_is_stored_and_read_back(store: Store) -> None:
    plan = clustered("a", "b", "c", cluster={"a": "document=x", "b": "document=x", "c": None})
    record(store, "run", [result(e.id) for e in plan], plan=plan)
    assert [(e.eval_id, e.cluster) for e in store.run("run").evals] == [("a", "document=x"), ("b", "document=x"),
                                                                        ("c", None)]  # fmt: skip


def test_diff_pairs_by_cluster_when_both_runs_stored_them(store: Store) -> None:
    by_doc = {e: e.split("-")[0] for e in DOC_QUESTIONS}
    plan = clustered(*DOC_QUESTIONS, cluster=by_doc)
    record(store, "base", [result(e) for e in DOC_QUESTIONS], plan=plan)
    broken = [result(e, "failed", score=0.0) if e.startswith("doc0") else result(e) for e in DOC_QUESTIONS]
    record(store, "head", broken, plan=plan)
    diff = store.diff("base", "head")  # ten questions of one document failing is one source's worth of evidence
    assert diff.suite is not None and (diff.suite.test, diff.suite.cases, diff.suite.clusters) == ("paired t", 30, 3)
    assert diff.suite.over == "30 shared evals in 3 clusters"
    assert diff.suite.note == "3 shared cases: not enough to tell" and not diff.regressed
    unclustered = clustered(*DOC_QUESTIONS, cluster=dict.fromkeys(DOC_QUESTIONS))  # as stored before clusters were
    record(store, "old", [result(e) for e in DOC_QUESTIONS], plan=unclustered)
    old = store.diff("old", "head")  # one side without clusters: the evals are paired one by one
    assert old.suite is not None and (old.suite.test, old.suite.cases, old.suite.clusters) == ("mcnemar", 30, 30)
    assert old.suite.over == "30 shared evals"
    assert old.regressed and old.reasons[0].startswith("suite pass rate: -0.33")


def test_clusters_of_one_eval_each_keep_mcnemar(store: Store) -> None:
    own = clustered(*DOC_QUESTIONS, cluster={e: e for e in DOC_QUESTIONS})
    record(store, "base", [result(e) for e in DOC_QUESTIONS], plan=own)
    record(store, "head", [result(e) for e in DOC_QUESTIONS], plan=own)
    diff = store.diff("base", "head")
    assert diff.suite is not None and (diff.suite.test, diff.suite.cases) == ("mcnemar", 30)


def test_a_score_test_counts_clusters_when_both_runs_stored_them(store: Store) -> None:
    plan = clustered(*DOC_QUESTIONS, cluster={e: e.split("-")[0] for e in DOC_QUESTIONS})
    record(store, "base", [judged(e, 0.9) for e in DOC_QUESTIONS], plan=plan)
    record(store, "head", [judged(e, 0.6 if e.startswith("doc0") else 0.9) for e in DOC_QUESTIONS], plan=plan)
    (rubric,) = store.diff("base", "head").mean_scores
    assert (rubric.cases, rubric.clusters, rubric.over) == (30, 3, "30 shared cases in 3 clusters")
    assert rubric.note == "3 shared cases: not enough to tell" and not rubric.regressed
