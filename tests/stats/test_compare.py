"""Tests of change, pinned to reference values and checked against scipy and statsmodels."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import statsmodels.api as sm
from scipy import stats as scipy_stats
from statsmodels.stats.contingency_tables import mcnemar as statsmodels_mcnemar
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import confint_proportions_2indep

from niceeval.stats import benjamini_hochberg, compare_rates, mcnemar, min_pairs, paired_bootstrap, paired_t


def test_fisher_comparison_matches_the_reference_table() -> None:
    result = compare_rates((10, 10), (2, 10))
    assert result.p_value == pytest.approx(0.000714, abs=1e-6)
    assert result.difference == pytest.approx(-0.8)
    assert result.significant and result.regression
    assert str(result) == "-0.80 (95% -0.94 to -0.38), p=0.000714 (fisher)"


def test_newcombe_interval_matches_newcombe_1998_and_statsmodels() -> None:
    result = compare_rates((48, 80), (56, 70))  # Newcombe 1998, table II: 56/70 - 48/80
    assert (round(result.low or 0, 4), round(result.high or 0, 4)) == (0.0524, 0.3339)
    rng = np.random.default_rng(3)
    for _ in range(100):
        n1, n2 = (int(x) for x in rng.integers(1, 60, size=2))
        k1, k2 = int(rng.integers(0, n1 + 1)), int(rng.integers(0, n2 + 1))
        low, high = confint_proportions_2indep(k2, n2, k1, n1, method="newcomb", compare="diff")
        ours = compare_rates((k1, n1), (k2, n2))
        assert (ours.low, ours.high) == (pytest.approx(low, abs=1e-9), pytest.approx(high, abs=1e-9))


def test_fisher_p_value_matches_scipy_on_random_counts() -> None:
    rng = np.random.default_rng(5)
    for _ in range(100):
        n1, n2 = (int(x) for x in rng.integers(5, 40, size=2))
        k1, k2 = int(rng.integers(0, n1 + 1)), int(rng.integers(0, n2 + 1))
        expected = scipy_stats.fisher_exact([[k1, n1 - k1], [k2, n2 - k2]]).pvalue
        assert compare_rates((k1, n1), (k2, n2)).p_value == pytest.approx(min(1.0, expected))


def test_three_runs_against_three_cannot_tell() -> None:
    result = compare_rates((3, 3), (0, 3))  # Fisher's smallest p-value here is 0.1
    assert result.p_value is None and not result.significant and not result.regression
    assert result.note == "3 vs 3 runs: not enough to tell"
    assert result.difference == -1.0
    assert str(result).endswith("3 vs 3 runs: not enough to tell")


def test_no_runs_on_one_side_is_said() -> None:
    result = compare_rates((0, 0), (3, 5))
    assert result.difference is None and result.note == "no runs on one side"


def _paired(rng: np.random.Generator, n: int) -> tuple[list[bool], list[bool]]:
    before = rng.random(n) < 0.8
    after = np.where(rng.random(n) < 0.3, rng.random(n) < 0.6, before)
    return [bool(x) for x in before], [bool(x) for x in after]


def test_mcnemar_matches_statsmodels_exact() -> None:
    rng = np.random.default_rng(9)
    for _ in range(100):
        before, after = _paired(rng, int(rng.integers(6, 80)))
        table = [
            [
                sum(b and a for b, a in zip(before, after, strict=True)),
                sum(b and not a for b, a in zip(before, after, strict=True)),
            ],
            [
                sum(a and not b for b, a in zip(before, after, strict=True)),
                sum(not a and not b for b, a in zip(before, after, strict=True)),
            ],
        ]
        expected = statsmodels_mcnemar(table, exact=True).pvalue
        ours = mcnemar(before, after)
        assert ours.p_value == pytest.approx(expected)
        assert ours.difference == pytest.approx((sum(after) - sum(before)) / len(before))


def test_two_shared_cases_are_not_enough_to_tell() -> None:
    result = mcnemar([True, True], [False, False])
    assert result.p_value is None and result.note == "2 shared cases: not enough to tell"
    assert result.difference == -1.0 and not result.regression


def test_the_fewest_pairs_that_can_reach_alpha() -> None:
    assert min_pairs(0.05) == 6  # 2 * 0.5**5 = 0.0625 > 0.05, 2 * 0.5**6 = 0.031
    assert mcnemar([True] * 6, [False] * 6).p_value == pytest.approx(0.03125)
    assert mcnemar([True] * 5, [False] * 5).p_value is None
    assert min_pairs(0.01) == 8


def test_no_flip_is_no_change() -> None:
    result = mcnemar([True, False] * 10, [True, False] * 10)
    assert result.p_value == 1.0 and result.difference == 0.0 and not result.significant
    assert result.unchanged


def _table(both: int, broke: int, fixed: int, neither: int) -> tuple[list[bool], list[bool]]:
    """Paired pass/fail outcomes with those counts: passed on both sides, before only, after only, neither."""
    before = [True] * both + [True] * broke + [False] * fixed + [False] * neither
    after = [True] * both + [False] * broke + [True] * fixed + [False] * neither
    return before, after


def test_mcnemars_interval_is_newcombes_for_paired_proportions() -> None:
    # Fagerland, Lydersen and Laake, Statistical Analysis of Contingency Tables (2017), the paired 2x2 table of
    # Cavo et al. (2012): 59 / 6 / 16 / 80, estimate -0.0621, Newcombe's square-and-add 95% CI -0.1186 to -0.0046
    # for the row margin minus the column margin; after minus before is the same interval turned round.
    result = mcnemar(*_table(59, 6, 16, 80))
    assert result.difference == pytest.approx(0.0621, abs=5e-5)
    assert (result.low, result.high) == (pytest.approx(0.0046, abs=5e-5), pytest.approx(0.1186, abs=5e-5))
    assert not result.unchanged


def test_cases_that_all_passed_on_both_sides_leave_a_change_possible() -> None:
    # the mean of the paired differences had no spread here: its interval was 0 to 0
    result = mcnemar(*_table(11, 0, 0, 0))
    assert result.difference == 0.0 and result.unchanged and result.p_value == 1.0
    assert result.low == pytest.approx(-0.2588, abs=5e-5) and result.high == pytest.approx(0.2588, abs=5e-5)
    every_flip = mcnemar(*_table(0, 12, 0, 0))
    assert every_flip.difference == -1.0 and every_flip.low == -1.0
    assert every_flip.high == pytest.approx(-0.6571, abs=5e-5)  # 12 cases cannot pin the drop at exactly 100 points


def test_the_interval_narrows_with_more_cases_and_covers_the_estimate() -> None:
    rng = np.random.default_rng(21)
    for _ in range(200):
        before, after = _paired(rng, int(rng.integers(1, 200)))
        result = mcnemar(before, after)
        assert result.low is not None and result.high is not None and result.difference is not None
        assert -1.0 <= result.low <= result.difference <= result.high <= 1.0
        assert result.high > result.low
    small, large = mcnemar(*_table(8, 1, 1, 0)), mcnemar(*_table(800, 100, 100, 0))
    assert small.low is not None and small.high is not None and large.low is not None and large.high is not None
    assert large.high - large.low < small.high - small.low


def test_paired_t_without_clusters_is_scipys_ttest_rel() -> None:
    rng = np.random.default_rng(13)
    for _ in range(50):
        n = int(rng.integers(6, 60))
        before = rng.normal(0.7, 0.2, size=n)
        after = before + rng.normal(-0.03, 0.1, size=n)
        expected = scipy_stats.ttest_rel(after, before)
        ours = paired_t(list(before), list(after))
        assert ours.p_value == pytest.approx(expected.pvalue, rel=1e-9)
        low, high = expected.confidence_interval(0.95)
        assert (ours.low, ours.high) == (pytest.approx(low, rel=2e-3), pytest.approx(high, rel=2e-3))


def test_clustered_paired_t_matches_statsmodels_cluster_robust_t_test() -> None:
    rng = np.random.default_rng(17)
    groups = rng.integers(0, 10, size=40)
    before = rng.random(40)
    after = before + rng.normal(-0.1, 0.2, size=10)[groups] + rng.normal(0, 0.1, size=40)
    fit = sm.OLS(after - before, np.ones(40)).fit(cov_type="cluster", cov_kwds={"groups": groups, "use_t": True})
    ours = paired_t(list(before), list(after), list(groups))
    assert ours.n == 10
    assert ours.p_value == pytest.approx(float(fit.pvalues[0]), rel=1e-6)


def test_identical_nonzero_changes_are_certain() -> None:
    result = paired_t([1.0] * 8, [0.5] * 8)
    assert result.p_value == 0.0 and result.regression
    assert paired_t([0.5] * 8, [0.5] * 8).p_value == 1.0


def test_paired_bootstrap_sign_flip_p_value_is_exact_for_few_cases() -> None:
    before = [0.9, 0.8, 0.7, 0.95, 0.6, 0.85, 0.75, 0.9]
    after = [0.7, 0.85, 0.5, 0.9, 0.4, 0.8, 0.7, 0.6]
    differences = [a - b for b, a in zip(before, after, strict=True)]
    observed = abs(sum(differences))
    flipped = [
        abs(sum(s * d for s, d in zip(signs, differences, strict=True)))
        for signs in itertools.product((1, -1), repeat=len(differences))
    ]
    exact = sum(1 for total in flipped if total >= observed - 1e-12) / len(flipped)
    result = paired_bootstrap(before, after)
    assert result.p_value == pytest.approx(exact)
    assert result.low is not None and result.high is not None
    assert result.low < (result.difference or 0) < result.high < 0


def test_paired_bootstrap_is_seeded_and_agrees_with_paired_t_on_large_samples() -> None:
    rng = np.random.default_rng(21)
    before = list(rng.random(200))
    after = [b + d for b, d in zip(before, rng.normal(-0.05, 0.15, size=200), strict=True)]
    first, again = paired_bootstrap(before, after, resamples=2000), paired_bootstrap(before, after, resamples=2000)
    assert first == again
    t_result = paired_t(before, after)
    assert first.low == pytest.approx(t_result.low, abs=0.01) and first.high == pytest.approx(t_result.high, abs=0.01)


def test_paired_bootstrap_resamples_whole_clusters() -> None:
    result = paired_bootstrap([1.0] * 12, [1.0, 0.0] * 6, [i // 2 for i in range(12)])
    assert result.n == 6 and result.difference == pytest.approx(-0.5)
    assert result.p_value == 0.0 and result.low == result.high == pytest.approx(-0.5)


def test_benjamini_hochberg_matches_statsmodels_and_keeps_missing_values() -> None:
    rng = np.random.default_rng(23)
    p_values = list(rng.random(50) ** 3)
    expected = multipletests(p_values, method="fdr_bh")[1]
    with_missing: list[float | None] = [*p_values[:10], None, *p_values[10:]]
    adjusted = benjamini_hochberg(with_missing)
    assert adjusted[10] is None
    assert [q for q in adjusted if q is not None] == pytest.approx(list(expected))
    assert benjamini_hochberg([None, None]) == [None, None] and benjamini_hochberg([]) == []


def test_many_null_evals_rarely_fail_after_false_discovery_control() -> None:
    rng = np.random.default_rng(29)
    runs = 10
    failing_suites = 0
    for _ in range(20):
        results = [
            compare_rates((int(rng.binomial(runs, 0.8)), runs), (int(rng.binomial(runs, 0.8)), runs))
            for _ in range(100)
        ]
        adjusted = benjamini_hochberg([r.p_value for r in results])
        failing_suites += any(q is not None and q < 0.05 for q in adjusted)
    assert failing_suites <= 2  # at most ~5% of suites, as false discovery control promises


@pytest.mark.parametrize("alpha", [0.0, 1.0, -0.1, 5.0])
def test_alpha_outside_zero_one_is_refused(alpha: float) -> None:
    with pytest.raises(ValueError, match="alpha must be between 0 and 1"):
        compare_rates((1, 2), (2, 2), alpha=alpha)


def test_unpaired_lengths_are_refused() -> None:
    with pytest.raises(ValueError, match="one value per case on each side, got 3 and 2"):
        paired_t([1.0, 2.0, 3.0], [1.0, 2.0])


PAIRED_SETTINGS = [
    (0.7, 0.1, 0.1), (0.8, 0.05, 0.1), (0.5, 0.2, 0.1), (0.9, 0.05, 0.0),
    (0.6, 0.0, 0.2), (0.3, 0.3, 0.3), (0.85, 0.1, 0.05), (0.95, 0.02, 0.02),
]  # fmt: skip
"""(passes on both sides, passes before only, passes after only) per case: the rest fail on both."""


def _exact_coverage(cases: int, both: float, broke: float, fixed: float) -> float:
    """The chance McNemar's interval holds the true change `fixed - broke`, summed over every table of `cases`."""
    from scipy.stats import multinomial

    chances = [both, broke, fixed, 1 - both - broke - fixed]
    truth, held = fixed - broke, 0.0
    for a in range(cases + 1):
        for b in range(cases + 1 - a):
            for c in range(cases + 1 - a - b):
                table = [a, b, c, cases - a - b - c]
                result = mcnemar(*_table(*table))
                assert result.low is not None and result.high is not None
                if result.low - 1e-12 <= truth <= result.high + 1e-12:
                    held += float(multinomial.pmf(table, cases, chances))
    return held


@pytest.mark.parametrize("cases", [10, 20])
def test_mcnemars_interval_holds_the_true_change_95_percent_of_the_time_or_more(cases: int) -> None:
    # exact, over every table. The t interval it replaced held it 40-100% of the time at 10 cases (mean 85%): where
    # nine cases in ten pass on both sides and one in twenty only before, most tables have no flip and its interval
    # was 0 to 0. Newcombe's is conservative at these sizes.
    coverage = [_exact_coverage(cases, *setting) for setting in PAIRED_SETTINGS]
    assert min(coverage) >= 0.93, coverage
    assert 0.95 <= float(np.mean(coverage)) <= 0.99, coverage
