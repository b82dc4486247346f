"""niceeval.stats exports these names and nothing else."""

import niceeval.stats


def test_stats_exports() -> None:
    assert sorted(niceeval.stats.__all__) == sorted(
        [
            "AdaptiveRuns",
            "Comparison",
            "Estimate",
            "EvalChange",
            "Power",
            "RunComparison",
            "benjamini_hochberg",
            "clustered_mean",
            "compare_rates",
            "compare_runs",
            "mcnemar",
            "min_pairs",
            "paired_bootstrap",
            "paired_t",
            "parse_runs",
            "power",
            "t_quantile",
            "wilson",
        ]
    )
    for name in niceeval.stats.__all__:
        assert hasattr(niceeval.stats, name), name
