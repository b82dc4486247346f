"""Agreement of two raters' pass/fail verdicts: the share agreeing with its Wilson interval, Cohen's kappa, flips."""

from __future__ import annotations

import pytest
from statsmodels.stats.inter_rater import cohens_kappa

from niceeval.stats import agreement, cohen_kappa, wilson


def test_agreement_counts_each_cell_and_the_flips_each_way() -> None:
    first = [True, True, True, False, False, True]
    second = [True, False, True, False, True, False]
    found = agreement(first, second)
    assert (found.both_pass, found.both_fail, found.pass_to_fail, found.fail_to_pass) == (2, 1, 2, 1)
    assert (found.items, found.agreed) == (6, 3)
    assert found.rate == wilson(3, 6)


def test_kappa_is_the_agreement_beyond_chance() -> None:
    # 10 items, 8 vs 5 passes: chance agreement 0.8 * 0.5 + 0.2 * 0.5 = 0.5, observed 0.7
    first = [True] * 8 + [False] * 2
    second = [True] * 5 + [False] * 5
    assert cohen_kappa(first, second) == pytest.approx((0.7 - 0.5) / (1 - 0.5))


def test_a_rater_that_passes_everything_has_kappa_zero_whatever_it_agrees() -> None:
    labels = [True] * 9 + [False]
    assert agreement(labels, [True] * 10).rate.value == 0.9
    assert cohen_kappa(labels, [True] * 10) == 0.0


def test_kappa_is_undefined_when_both_raters_give_one_same_verdict_throughout() -> None:
    assert cohen_kappa([True, True], [True, True]) is None
    assert cohen_kappa([], []) is None
    assert agreement([], []).rate.value is None


def test_kappa_matches_a_reference_implementation() -> None:
    import random

    rng = random.Random(4)
    for _ in range(50):
        n = rng.randint(2, 40)
        first = [rng.random() < 0.6 for _ in range(n)]
        second = [f if rng.random() < 0.7 else not f for f in first]
        if len(set(first)) == 1 or len(set(second)) == 1:  # a constant rater: the test above
            continue
        table = [[sum(1 for a, b in zip(first, second, strict=True) if a == x and b == y) for y in (True, False)]
                 for x in (True, False)]  # fmt: skip
        assert cohen_kappa(first, second) == pytest.approx(cohens_kappa(table).kappa)


def test_verdicts_that_do_not_pair_are_refused() -> None:
    with pytest.raises(ValueError, match="one per item from each rater"):
        agreement([True], [True, False])
