"""What a suite's figures need from its evals, folded as each eval finishes: memory that does not grow with its cases.

A suite of a million cases cannot keep a tally per eval (docs/design/runner.md, "Memory"). Each eval's tally
is folded here once it is done (its last run reported), or when the suite ends with it unfinished, then dropped:
counts by verdict, runs, spend, and the sums the clustered estimates are taken from (`ClusterSums`: a cluster's
sums are held only until its last planned eval is folded).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from niceeval._core.outcome import OUTCOMES, Outcome
from niceeval._core.results import Spend
from niceeval._core.tally import EvalTally, SpendSum


@dataclass(kw_only=True, slots=True)
class ClusterSums:
    """Per-cluster totals `(T_c, m_c)` summed over clusters as each cluster completes (the fields of
    `niceeval.stats.ClusterMoments`); a cluster shared by several evals is held open until `release`."""

    clusters: int = 0
    items: int = 0
    total: float = 0.0
    squares: float = 0.0
    runs: int = 0
    inverse_runs: float = 0.0
    cluster_squares: float = 0.0
    cluster_cross: float = 0.0
    cluster_size_squares: float = 0.0
    _open: dict[str, list[float]] = field(default_factory=dict, repr=False)

    def add(self, value: float, *, size: int = 1, runs: int = 0, cluster: str | None = None) -> None:
        """One item: a case's rate (`size` 1, its `runs`), or a cluster's part of a mean (`value` a sum of `size`
        values); `cluster`: held with the other items of that cluster until it is released; None: a cluster alone."""
        self.items += size
        self.total += value
        self.squares += value * value
        if runs:
            self.runs += runs
            self.inverse_runs += 1 / runs
        if cluster is None:
            self._fold(value, size)
            return
        held = self._open.setdefault(cluster, [0.0, 0.0])
        held[0] += value
        held[1] += size

    def release(self, cluster: str) -> None:
        """The cluster's last item was added: its totals are folded."""
        held = self._open.pop(cluster, None)
        if held is not None:
            self._fold(held[0], held[1])

    def release_all(self) -> None:
        """The suite ended: every cluster still open is folded as it is."""
        for cluster in list(self._open):
            self.release(cluster)

    def _fold(self, total: float, size: float) -> None:
        self.clusters += 1
        self.cluster_squares += total * total
        self.cluster_cross += total * size
        self.cluster_size_squares += size * size


@dataclass(kw_only=True, slots=True)
class SuiteTotals:
    """A suite's evals folded one at a time under its gates (`--strict`, `--min-pass-rate`, `--min-pass-at-k`).

    `shared` counts the planned evals of each cluster more than one eval belongs to (a case's variants, a
    `define_eval(cluster=...)` key): such a cluster's sums are held until its last eval is folded. Every other eval
    is a cluster of its own, folded at once.
    """

    strict: bool
    min_pass_rate: float
    min_pass_at_k: tuple[int, float] | None = None
    planned: int = 0
    """Evals the suite planned (those never started count here only)."""
    clustered: bool = False
    """Whether some planned eval's cluster is not the eval itself (the console then says `clusters`, not `cases`)."""
    shared: Counter[str] = field(default_factory=Counter)
    verdicts: dict[Outcome, int] = field(default_factory=lambda: dict.fromkeys(OUTCOMES, 0))
    """Evals with a run, by verdict."""
    runs_done: int = 0
    inconclusive: int = 0
    infra: int = 0
    unstable: int = 0
    _agent: SpendSum = field(default_factory=SpendSum, repr=False)
    _judge: SpendSum = field(default_factory=SpendSum, repr=False)
    rates: ClusterSums = field(default_factory=ClusterSums)
    """The counted evals' pass rates (their first runs under adaptive repeats), by cluster: the suite's rate."""
    cases: ClusterSums = field(default_factory=ClusterSums)
    """Each eval with a verdict other than skipped, 1 when not failed: `--min-suite-pass-rate`'s rate over cases."""
    points: ClusterSums = field(default_factory=ClusterSums)
    """Score evals' shares of their points possible, by cluster: the suite's mean points."""
    runs_seen: Counter[int] = field(default_factory=Counter)
    """How many counted evals had each number of counted runs (the power's runs per case: the most common)."""

    @classmethod
    def of(
        cls,
        tallies: Iterable[EvalTally],
        *,
        strict: bool,
        min_pass_rate: float,
        min_pass_at_k: tuple[int, float] | None,
    ) -> SuiteTotals:
        """Every tally of a finished suite folded, in order (a stored run, a pytest session)."""
        held = list(tallies)
        totals = cls(strict=strict, min_pass_rate=min_pass_rate, min_pass_at_k=min_pass_at_k, planned=len(held))
        totals.shared = Counter(t.eval.cluster for t in held if t.eval.cluster is not None and _shares(t))
        totals.clustered = bool(totals.shared) or any(t.eval.cluster not in (None, t.eval.id) for t in held)
        for tally in held:
            totals.add(tally)
        totals.close()
        return totals

    def status_of(self, tally: EvalTally) -> Outcome:
        """One eval's verdict under these gates."""
        return tally.status(strict=self.strict, min_pass_rate=self.min_pass_rate, min_pass_at_k=self.min_pass_at_k)

    def add(self, tally: EvalTally) -> None:
        """Fold one eval that is done (or will get no more runs)."""
        done = tally.done
        verdict = self.status_of(tally) if done else "skipped"
        if done:
            self.verdicts[verdict] += 1
        self.runs_done += done
        self.inconclusive += tally.inconclusive
        self.infra += tally.infra
        self.unstable += tally.unstable
        tally.spend_into(self._agent, self._judge)
        cluster = tally.eval.cluster if _shares(tally) else None
        passes, counted = tally.case_counts(strict=self.strict)
        if counted:
            self.rates.add(passes / counted, runs=counted, cluster=cluster)
            self.runs_seen[counted] += 1
        if verdict != "skipped" and tally.counted:
            self.cases.add(float(verdict != "failed"), runs=1, cluster=cluster)
        if fractions := tally.points_fractions:
            self.points.add(math.fsum(fractions), size=len(fractions), cluster=cluster)
        if cluster is not None:
            self.shared[cluster] -= 1
            if self.shared[cluster] <= 0:
                del self.shared[cluster]
                for sums in (self.rates, self.cases, self.points):
                    sums.release(cluster)

    def close(self) -> None:
        """The suite ended: clusters with an eval never finished are folded as they are."""
        for sums in (self.rates, self.cases, self.points):
            sums.release_all()
        self.shared.clear()

    @property
    def agent_spend(self) -> Spend:
        """What the agent spent over the evals folded."""
        return self._agent.spend

    @property
    def judge_spend(self) -> Spend:
        """What the judges spent over the evals folded (calls and cached verdicts)."""
        return self._judge.spend

    @property
    def failed(self) -> bool:
        """Whether some eval's verdict is `failed`."""
        return self.verdicts["failed"] > 0

    def runs_per_case(self) -> int:
        """The most common number of counted runs among the counted evals (1 for none)."""
        common = self.runs_seen.most_common(1)
        return common[0][0] if common else 1


def _shares(tally: EvalTally) -> bool:
    return tally.eval.cluster is not None and tally.eval.cluster != tally.eval.id
