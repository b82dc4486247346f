"""pass@k and pass^k from n runs of which c passed (the unbiased estimators, Chen et al. 2021; Yao et al. 2024).

pass@k: the chance that at least one of k runs drawn without replacement from the n passes.
pass^k: the chance that all k of them pass (how reliably the eval passes every time).
"""

from __future__ import annotations

from math import comb


def pass_at_k(n: int, c: int, k: int) -> float:
    """1 - C(n - c, k) / C(n, k): at least one of k sampled runs passes."""
    _check(n, c, k)
    if n - c < k:
        return 1.0
    return 1.0 - comb(n - c, k) / comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """C(c, k) / C(n, k): all k sampled runs pass."""
    _check(n, c, k)
    return comb(c, k) / comb(n, k)


def _check(n: int, c: int, k: int) -> None:
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass@k needs 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")
