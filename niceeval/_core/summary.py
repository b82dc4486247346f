"""Suite-level records reporters read: the plan before the run, per-eval tallies and the summary after."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import islice
from typing import Any, Literal, overload

from niceeval._core.outcome import Outcome
from niceeval._core.results import RunResult, Spend
from niceeval._core.suite_totals import SuiteTotals
from niceeval._core.tally import LATENCY_SAMPLE as LATENCY_SAMPLE
from niceeval._core.tally import EvalTally as EvalTally
from niceeval._core.tally import LatencySample as LatencySample
from niceeval._core.tally import PlannedEval as PlannedEval
from niceeval._core.tally import latency_text as latency_text
from niceeval._core.tally import percentile as percentile
from niceeval._core.tally import points_by_cluster as points_by_cluster


class Plan(Sequence[PlannedEval]):
    """The evals a suite plans, in order, and each eval under way by its id: what the suite hands its reporters,
    which read an eval's record from it as its runs finish.

    The suite's plan holds no record per eval: iterating it reads the planned evals again (a dataset's rows, each
    made into its `PlannedEval`), so a reporter that walks it costs a pass over the datasets, not their memory.
    `lookup` is the suite's own index of the evals under way (and of those it holds: adaptive, eval groups).
    `tallies`, when given, is its index of their running tallies: the reporters read those (`ReporterTallies`)
    instead of counting every run again.
    """

    __slots__ = ("_count", "_held", "_lookup", "_read", "_tallies")

    def __init__(
        self,
        read: Callable[[], Iterator[PlannedEval]],
        count: int,
        lookup: Callable[[str], PlannedEval | None],
        held: Iterable[PlannedEval] = (),
        tallies: Callable[[str], EvalTally | None] | None = None,
    ) -> None:
        """`held`: the records the suite holds from start to end (its adaptive and eval-group evals), the very
        objects a walk of the plan yields for them. `tallies`: the tally of an eval under way, each run counted in
        it before the reporters are given the run (None: the plan's owner keeps none its reporters may read)."""
        self._read = read
        self._count = count
        self._lookup = lookup
        self._held = held
        self._tallies = tallies

    @classmethod
    def of(cls, evals: Sequence[PlannedEval]) -> Plan:
        """A plan over records at hand, each looked up by its id."""
        held = list(evals)
        return cls(lambda: iter(held), len(held), {p.id: p for p in held}.get, held)

    def adaptive(self) -> list[PlannedEval]:
        """The evals under adaptive repeats (`first_runs` set), without a pass over the plan: their records are
        held (adaptive repeats raise their runs in place)."""
        return [p for p in self._held if p.first_runs is not None]

    @overload
    def __getitem__(self, index: int) -> PlannedEval: ...
    @overload
    def __getitem__(self, index: slice) -> list[PlannedEval]: ...
    def __getitem__(self, index: int | slice) -> PlannedEval | list[PlannedEval]:
        if isinstance(index, slice):
            return list(self)[index]  # a pass that lists every eval: the suite's own code walks the plan instead
        position = range(self._count)[index]  # an IndexError past the end, as a list's
        return next(islice(self, position, None))

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[PlannedEval]:
        return self._read()

    def get(self, eval_id: str) -> PlannedEval | None:
        """The planned eval with id `eval_id` while its runs are under way (the record its tally counts against,
        whose `runs` repeats may raise); None when the suite does not plan it or the eval is done."""
        return self._lookup(eval_id)

    def tally(self, eval_id: str) -> EvalTally | None:
        """The suite's running tally of an eval under way, the run just given to the reporters already counted in
        it; None when the plan's owner keeps no tallies to share (a plan at hand) or does not run the eval."""
        return None if self._tallies is None else self._tallies(eval_id)


class ReporterTallies(Mapping[str, EvalTally]):
    """A reporter's tallies of the evals it has a run of and has not written yet, by eval id: the one place a
    reporter counts runs. Under a plan that shares its owner's tallies (`Plan.tally`: a stored run's replay) each
    eval's tally is that one, counted once for every reporter; under any other (a plan at hand, the live suite's)
    each run is counted here.

    `unplanned`: the record for a run of an eval the plan does not name (None: the run is left out).
    """

    __slots__ = ("_open", "_plan", "_unplanned")

    def __init__(self, plan: Plan, unplanned: Callable[[RunResult], PlannedEval | None]) -> None:
        self._plan = plan
        self._unplanned = unplanned
        self._open: dict[str, tuple[EvalTally, bool]] = {}
        """Each eval with a run given and not written: its tally, and whether its runs are counted here (a plan
        that shares none)."""

    def add(self, result: RunResult) -> EvalTally | None:
        """The tally of `result`'s eval with `result` counted in it; None when the run is left out."""
        eval_id = result.eval_id
        found = self._open.get(eval_id)
        if found is None:
            shared = self._plan.tally(eval_id)
            if shared is not None:
                self._open[eval_id] = (shared, False)
                return shared
            planned = self._plan.get(eval_id) or self._unplanned(result)
            if planned is None:
                return None
            found = self._open[eval_id] = (EvalTally(eval=planned), True)
        tally, counts_here = found
        if counts_here:
            tally.add(result)
        return tally

    def __getitem__(self, eval_id: str) -> EvalTally:
        """The tally of an eval with a run given and not written."""
        return self._open[eval_id][0]

    def __iter__(self) -> Iterator[str]:
        """The ids of the evals with a run given and not written."""
        return iter(self._open)

    def __len__(self) -> int:
        return len(self._open)

    def written(self, eval_id: str) -> None:
        """The reporter wrote the eval: its tally is let go."""
        del self._open[eval_id]

    def clear(self) -> None:
        """The reporter wrote every eval (its `finish`)."""
        self._open.clear()


def plan_index(plan: Sequence[PlannedEval]) -> Plan:
    """`plan` looked up by eval id: the suite's own `Plan` as it is, any other sequence indexed."""
    if isinstance(plan, Plan):
        return plan
    return Plan.of(plan)


@dataclass(frozen=True, kw_only=True, slots=True)
class Problem:
    """A load or configuration problem found before or during the run (exit code 2)."""

    location: str
    message: str
    kind: Literal["load", "usage"] = "load"
    """`load`: a module that did not import (it ran no eval); `usage`: API misuse inside an eval that ran."""


@dataclass(kw_only=True, slots=True)
class SuiteSummary:
    """What the whole suite came to; the exit code follows from it.

    It holds no tally per eval: each eval is folded into `totals` when its last run is reported (`SuiteTotals`),
    so a suite of a million cases keeps the memory of a few. `unfinished` keeps the tallies of the evals no
    reporter was told were done (docs/design/runner.md, "Memory").
    """

    totals: SuiteTotals = field(repr=False)
    problems: list[Problem]
    duration_s: float
    # Not in the repr: asyncio reprs the main task, result included, when it restores the SIGINT handler at the
    # end of `anyio.run` (bench/NOTES.md, "Memory").
    unfinished: list[EvalTally] = field(default_factory=list, repr=False)
    """The evals with runs left when the suite ended (interrupted or stopped early: those never started too, with
    no run), or, in a summary built by `SuiteSummary.of`, every eval: reporters that write an eval when it is done
    write these at the end."""
    interrupted: bool = False
    terminated: bool = False
    """Interrupted by SIGTERM rather than Ctrl-C (exit code 143, not 130)."""
    missing_runs: int = 0
    """Eval runs a stored suite run planned but does not hold (`incomplete`, `running` or `interrupted` when
    reported from the store); every report states them."""
    stopped: str | None = None
    """Why the suite stopped starting runs early (`--budget` reached, `-x/--exitfirst`); None when it did not."""
    not_started: int = 0
    """Runs never started because the suite stopped early (or their eval did, `halted`)."""
    halted: dict[str, str] = field(default_factory=dict)
    """Evals an `EvalFatalError` stopped (none of their remaining runs started): eval id -> why."""
    adaptive_most: int | None = None
    """With `--runs LOW..HIGH`: HIGH, the fixed count the runs made are weighed against (`runs_saved`)."""
    runs_saved: int | None = None
    """With `--runs LOW..HIGH`: the runs a fixed `--runs HIGH` would have made beyond those made (evals with
    `define_eval(runs=N)` left out); None otherwise."""

    @classmethod
    def of(
        cls,
        tallies: Iterable[EvalTally],
        *,
        strict: bool,
        min_pass_rate: float,
        min_pass_at_k: tuple[int, float] | None = None,
        **fields: Any,
    ) -> SuiteSummary:
        """The summary of a suite whose every tally is at hand (a stored run, a pytest session), in plan order;
        `fields` are `SuiteSummary`'s others."""
        held = list(tallies)
        totals = SuiteTotals.of(held, strict=strict, min_pass_rate=min_pass_rate, min_pass_at_k=min_pass_at_k)
        return cls(totals=totals, unfinished=held, **fields)

    @property
    def strict(self) -> bool:
        return self.totals.strict

    @property
    def min_pass_rate(self) -> float:
        return self.totals.min_pass_rate

    @property
    def min_pass_at_k(self) -> tuple[int, float] | None:
        """`--min-pass-at-k K:RATE`: an eval with `--runs N` fails when its pass@K is under RATE."""
        return self.totals.min_pass_at_k

    @property
    def evals(self) -> int:
        """The evals the suite planned."""
        return self.totals.planned

    def eval_counts(self) -> dict[Outcome, int]:
        """Evals with a run, by verdict."""
        return dict(self.totals.verdicts)

    def status_of(self, tally: EvalTally) -> Outcome:
        """One eval's verdict under this suite's gates (`--strict`, `--min-pass-rate`, `--min-pass-at-k`)."""
        return self.totals.status_of(tally)

    @property
    def runs_done(self) -> int:
        return self.totals.runs_done

    @property
    def inconclusive(self) -> int:
        return self.totals.inconclusive

    @property
    def infra(self) -> int:
        """Runs not counted in any pass rate because they failed for `infra` (after their retries)."""
        return self.totals.infra

    @property
    def unstable(self) -> int:
        return self.totals.unstable

    @property
    def agent_spend(self) -> Spend:
        return self.totals.agent_spend

    @property
    def judge_spend(self) -> Spend:
        return self.totals.judge_spend

    @property
    def exit_code(self) -> int:
        """0 all passed, 1 any failed, 2 a usage or configuration problem, 130 interrupted (143 by SIGTERM)."""
        if self.interrupted:
            return 143 if self.terminated else 130
        if self.problems:
            return 2
        return 0 if not self.totals.failed and self.stopped is None else 1
