"""The public surface is small and deliberate: these names, and nothing else, are exported."""

import importlib

import pytest

import niceeval
import niceeval.agents
import niceeval.expect


def test_top_level_exports() -> None:
    assert sorted(niceeval.__all__) == sorted(
        [
            "AssertionResult",
            "Check",
            "Config",
            "ConfigError",
            "EvalContext",
            "EvalGroup",
            "EvalFatalError",
            "EvalSpec",
            "ExperimentFatalError",
            "FailureClass",
            "JudgeSettings",
            "NiceevalError",
            "Outcome",
            "Price",
            "RunResult",
            "Session",
            "SimulatedConversation",
            "SyncEvalContext",
            "ToolCall",
            "Turn",
            "UsageError",
            "define_config",
            "define_eval",
            "run",
            "run_async",
            "SuiteResult",
            "define_eval_group",
            "EvalRef",
            "Experiment",
            "define_experiment",
        ]
    )


def test_expect_exports() -> None:
    assert sorted(niceeval.expect.__all__) == sorted(
        [
            "AssertionResult",
            "EventPattern",
            "Matcher",
            "ToolPattern",
            "Verdict",
            "all_of",
            "any_of",
            "command_succeeded",
            "ends_with",
            "equals",
            "event",
            "excludes",
            "has_sections",
            "in_order",
            "includes",
            "includes_all",
            "includes_any",
            "includes_url",
            "is_at_least",
            "is_at_most",
            "is_close_to",
            "is_false",
            "is_greater_than",
            "is_less_than",
            "is_not_none",
            "is_true",
            "json_includes",
            "levenshtein",
            "make_assertion",
            "matches",
            "not_",
            "satisfies",
            "similarity",
            "starts_with",
            "tool",
        ]
    )


def test_every_exported_name_exists() -> None:
    for module in (niceeval, niceeval.expect, niceeval.agents):
        for name in module.__all__:
            assert hasattr(module, name), f"{module.__name__}.{name}"


def test_store_exports() -> None:
    import niceeval.store

    assert sorted(niceeval.store.__all__) == sorted(
        [
            "AcceptanceInfo",
            "CompareOptions",
            "DEFAULT_PATH",
            "DiffOptions",
            "EvalRunInfo",
            "InspectLog",
            "Measured",
            "OutcomeChange",
            "PlannedEvalInfo",
            "RunDiff",
            "RunNotFound",
            "ScoreChange",
            "SetupComparison",
            "ShardInfo",
            "Store",
            "StoreError",
            "StoredRun",
            "SuiteRunDetail",
            "SuiteRunInfo",
            "SuiteRunStart",
            "TurnRecord",
            "may_hold_cases",
            "read_inspect_log",
        ]
    )
    for name in niceeval.store.__all__:
        assert hasattr(niceeval.store, name), f"niceeval.store.{name}"


def test_stats_exports() -> None:
    import niceeval.stats

    assert sorted(niceeval.stats.__all__) == sorted(
        [
            "AdaptiveRuns",
            "Agreement",
            "CaseUsage",
            "Comparison",
            "Dimension",
            "Dominance",
            "DriftMonitor",
            "Estimate",
            "EvalChange",
            "PairedChange",
            "PairedResampler",
            "Power",
            "RateSums",
            "RunComparison",
            "ScoreTest",
            "UsageColumns",
            "UsageComparison",
            "UsageEstimate",
            "Verdict",
            "agreement",
            "benjamini_hochberg",
            "cohen_kappa",
            "clustered_mean",
            "clustered_mean_of_sums",
            "clustered_rate",
            "ClusterMoments",
            "clustered_mean_of",
            "clustered_rate_of",
            "power_of",
            "clustered_rate_of_sums",
            "compare_rates",
            "compare_runs",
            "compare_usage",
            "dominance",
            "estimate_usage",
            "evidence_paths",
            "mcnemar",
            "mean_lower_bound",
            "min_pairs",
            "paired_bootstrap",
            "paired_t",
            "parse_runs",
            "pareto_front",
            "power",
            "t_quantile",
            "verdict",
            "wilson",
        ]
    )
    for name in niceeval.stats.__all__:
        assert hasattr(niceeval.stats, name), name


def test_judge_exports_what_an_eval_author_calls() -> None:
    import niceeval.judge

    assert sorted(niceeval.judge.__all__) == sorted(
        ["Autoevals", "Judge", "JudgeCall", "JudgeHandle", "JudgeSpend", "judge_spend"]
    )
    for name in niceeval.judge.__all__:
        assert hasattr(niceeval.judge, name), f"niceeval.judge.{name}"


@pytest.mark.parametrize("module", ["niceeval.judge", "niceeval.store"])
def test_dir_shows_only_the_public_names(module: str) -> None:
    """What a user sees in `dir(...)` is the surface: runner wiring lives in private modules."""
    imported = importlib.import_module(module)
    # pytest rewrites the asserts of its plugins' packages (niceeval is one), adding `@py_builtins` and the like
    shown = sorted(name for name in dir(imported) if name.isidentifier() and not name.startswith("_"))
    assert shown == sorted(imported.__all__)


@pytest.mark.parametrize(
    ("module", "name"),
    [
        ("niceeval.judge", "JudgeRuntime"),
        ("niceeval.judge", "JudgeSession"),
        ("niceeval.judge", "JudgeClients"),
        ("niceeval.judge", "JudgeCache"),
        ("niceeval.store", "StoreSink"),
    ],
)
def test_runner_wiring_is_not_public(module: str, name: str) -> None:
    assert not hasattr(importlib.import_module(module), name)


def test_simulation_exports() -> None:
    import niceeval.simulation

    assert sorted(niceeval.simulation.__all__) == sorted(
        [
            "BUILT_IN",
            "Exchange",
            "Guess",
            "Persona",
            "RealismReport",
            "Scene",
            "Transcript",
            "UserModel",
            "UserModelUnavailable",
            "UserTurn",
            "discriminate",
            "expert",
            "impatient",
            "indecisive",
            "novice",
            "persona",
            "read_transcripts",
            "resolve_persona",
            "simulated_transcripts",
            "user_turn",
        ]
    )


def test_attacks_exports() -> None:
    import niceeval.attacks

    assert sorted(niceeval.attacks.__all__) == sorted(
        [
            "FAMILIES",
            "RESISTED",
            "SECRET_FILE",
            "SINK_HOST",
            "VECTORS",
            "AttackOutcome",
            "AttackPage",
            "AttackRates",
            "AttackTally",
            "AttackTemplate",
            "Rate",
            "RateChange",
            "attack_cases",
            "attack_rates",
            "attack_text",
            "change_lines",
            "compare_rates",
            "judge_attack",
            "plant",
            "resisted",
        ]
    )
    for name in niceeval.attacks.__all__:
        assert getattr(niceeval.attacks, name) is not None
