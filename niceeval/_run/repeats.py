"""How many times each eval runs: `--runs N`, `define_eval(runs=N)`, and adaptive repeats (`--runs LOW..HIGH`).

With adaptive repeats an eval's first LOW runs are queued; when its last queued run finishes, the rule of
`niceeval.stats.AdaptiveRuns` decides whether it runs once more (its verdict is not yet clear from its
pass-rate interval, and it has fewer than HIGH runs). The decision is taken before reporters see that run: the
eval's planned count is raised first, so a reporter that waits for an eval's last run keeps waiting.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Container, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from niceeval._core.summary import EvalTally, PlannedEval
from niceeval._run.discovery import EvalEntry
from niceeval.stats import AdaptiveRuns

if TYPE_CHECKING:
    from niceeval._run.shard import Shard  # `--shard` only: its class is not needed to run without one

WorkItem = tuple[EvalEntry, list[int]]


class RunQueue:
    """The work items workers pull: a plain iterator that can be refilled after it ran dry (a repeat decided
    while the last runs finish is pulled by the next worker that asks, or by the next round of workers)."""

    def __init__(self, first: Iterator[WorkItem]) -> None:
        self._first = first
        self._more: deque[WorkItem] = deque()

    def __iter__(self) -> RunQueue:
        return self

    def __next__(self) -> WorkItem:
        if self._more:  # repeats first: the evals still undecided finish sooner
            return self._more.popleft()
        return next(self._first)

    def add(self, entry: EvalEntry, index: int) -> None:
        self._more.append((entry, [index]))

    @property
    def refilled(self) -> bool:
        """Whether repeats wait that no worker took yet."""
        return bool(self._more)


def runs_of(entry: EvalEntry, runs: int) -> int:
    """The runs `entry` gets at first: its own `define_eval(runs=N)`, else `runs` (`--runs N`, or LOW)."""
    return entry.spec.runs or runs


def first_runs(entry: EvalEntry, adaptive: AdaptiveRuns | None) -> int | None:
    """With adaptive repeats, the runs `entry` makes whatever they show (LOW), which the suite's pass rate counts:
    the runs after them are made or not on what these showed, so a rate over all of them is biased (an eval that
    missed stops, one that passed goes on). None for `--runs N` and for `define_eval(runs=N)`."""
    return adaptive.least if adaptive is not None and entry.spec.runs is None else None


def work(
    entries: Iterable[EvalEntry],
    runs: int,
    done: Container[tuple[str, int]],
    shard: Shard | None = None,
    *,
    in_order: bool = False,
) -> Iterator[WorkItem]:
    """One item per run, or one per eval (its runs, in order) for `sequential_runs` or `in_order` (every eval), or
    one per eval group and run index (an attempt of the group, given as its first member with work at that index:
    the worker runs them all).

    The repeats of an eval sit next to each other, so with free workers they run at the same time. Runs in `done`
    (kept from a resumed suite run) and runs of other shards are left out.
    """
    attempts: set[tuple[str, int]] = set()
    for entry in entries:
        indexes = range(runs_of(entry, runs)) if shard is None else shard.run_indexes(entry, runs)
        todo = [index for index in indexes if (entry.id, index) not in done]
        if (key := entry.eval_group_key) is not None:
            fresh = [index for index in todo if (key, index) not in attempts]
            attempts.update((key, index) for index in fresh)
            yield from ((entry, [index]) for index in fresh)
        elif (entry.spec.sequential_runs or in_order) and todo:
            yield entry, todo
        else:
            yield from ((entry, [index]) for index in todo)


@dataclass(kw_only=True)
class Repeats:
    """Adaptive repeats over a suite: which eval runs again, and the runs saved against a fixed HIGH (with no
    policy, `--runs N`: nothing runs again)."""

    policy: AdaptiveRuns | None
    gate: float
    strict: bool
    entries: dict[str, EvalEntry]
    next_index: dict[str, int] = field(default_factory=dict)
    """Per adaptive eval: the run index its next repeat gets (past every index queued or already stored)."""

    @classmethod
    def plan(
        cls, policy: AdaptiveRuns | None, entries: Sequence[EvalEntry], done: Container[tuple[str, int]], **rule: float
    ) -> Repeats:
        # a group's members run as one attempt: a repeat of one member alone would run outside its sandbox
        adaptive = {e.id: e for e in entries if e.spec.runs is None and e.eval_group is None} if policy else {}
        repeats = cls(policy=policy, gate=rule["gate"], strict=bool(rule["strict"]), entries=adaptive)
        for entry in adaptive.values():
            assert policy is not None
            stored = [index for index in range(policy.most) if (entry.id, index) in done]
            repeats.next_index[entry.id] = max([policy.least - 1, *stored]) + 1
        return repeats

    def planned(self, plan: Sequence[PlannedEval], done: Container[tuple[str, int]]) -> None:
        """Count an adaptive eval's stored runs (`--resume`) in its planned runs: they are all replayed."""
        for planned in plan:
            if self.policy is not None and planned.id in self.entries:
                stored = sum((planned.id, index) in done for index in range(self.policy.most))
                queued = sum((planned.id, index) not in done for index in range(self.policy.least))
                planned.runs = stored + queued

    def again(self, tally: EvalTally, queue: RunQueue) -> None:
        """After a run of `tally`'s eval (already added), queue one more when the rule says so."""
        entry = self.entries.get(tally.eval.id)
        if entry is None or self.policy is None or tally.done < tally.eval.runs or tally.done >= self.policy.most:
            return
        if not self.policy.wants_more(tally.passing(strict=self.strict), tally.counted, gate=self.gate):
            return
        tally.eval.runs += 1
        index = self.next_index[entry.id]
        self.next_index[entry.id] = index + 1
        queue.add(entry, index)

    def saved(self, made: Mapping[str, int]) -> int | None:
        """The runs a fixed `--runs HIGH` would have made beyond those `made` (by eval id; adaptive evals only, an
        eval not in `made` made none); None without."""
        if self.policy is None:
            return None
        return sum(max(0, self.policy.most - made.get(eval_id, 0)) for eval_id in self.entries)
