"""`define_experiment`: a named, committed setup (agent, model, flags, attempts, budget) that a suite runs against.

An experiment lives in `experiments/<id>.py`, one per file, its id the file's stem. `niceeval exp` runs each as one
suite run tagged with its id (`_run/experiments.py`); evals read its `model` and `flags` as `t.model`, `t.flags`
(`ExperimentView`, what a run is given).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from niceeval._core.errors import ConfigError, UsageError, caller_location
from niceeval._core.settings import JudgeSettings

__all__ = ["EvalRef", "Experiment", "ExperimentView", "Flags", "define_experiment"]


@dataclass(frozen=True, kw_only=True, slots=True)
class EvalRef:
    """What an experiment's `evals=` predicate is given about each eval found."""

    id: str
    file: str
    tags: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class Experiment:
    """One experiment, as `define_experiment` built it; `id` is set by the loader (the file's stem)."""

    agent: Any = None
    """The agent under test (the config's when None)."""
    model: str | None = None
    """`provider/model`: `t.model`, and the model `openai_agent` / `anthropic_agent` call in this experiment."""
    flags: Mapping[str, Any] = field(default_factory=dict)
    """What the agent and the evals read as `t.flags["name"]` (a prompt variant, a skill switched on)."""
    labels: Mapping[str, str] = field(default_factory=dict)
    """Free words about the setup (`{"team": "search"}`), shown by `niceeval exp list`."""
    runs: int | None = None
    """Attempts per eval (`--runs` wins)."""
    budget: float | None = None
    """USD at which no new run starts (`--budget` wins)."""
    concurrency: int | None = None
    timeout: float | None = None
    evals: Sequence[str] | Callable[[EvalRef], bool] | None = None
    """Which evals: paths (`evals/support`), globs (`evals/**/refund_*.py`), tags (`tag:smoke`), or a predicate
    over `EvalRef`; the config's `evals` when None."""
    judge: JudgeSettings | None = None
    """The judge settings for this experiment, over the config's."""
    sandbox: Any = None
    """What runs sandbox evals' commands (the config's when None)."""
    setup: Callable[[], Any] | None = None
    """Called once before the experiment's evals run, on the host (sync or async)."""
    teardown: Callable[[], Any] | None = None
    """Called once after, even when the run was interrupted or failed."""
    early_exit: bool = False
    """Stop an eval's attempts at its first pass (pass@k): its attempts then run one after another."""
    id: str = ""
    file: str = ""
    """`experiments/<id>.py`, set by the loader."""
    line: int = 0
    """The line of `define_experiment(...)`."""

    def settings(self) -> dict[str, Any]:
        """What defines the experiment's configuration (digested into each slot's identity)."""
        judge = self.judge.model_dump(exclude_unset=True) if self.judge is not None else None
        return {"model": self.model, "flags": dict(self.flags), "judge": judge, "sandbox": repr(self.sandbox)}


_NUMBERS: dict[str, tuple[type, bool]] = {
    "runs": (int, True),
    "concurrency": (int, True),
    "budget": (float, False),
    "timeout": (float, False),
}


def define_experiment(**settings: Any) -> Experiment:
    """Define the experiment of an `experiments/<id>.py` file (assign it to `experiment`).

    Keys: `agent`, `model`, `flags`, `labels`, `runs`, `budget`, `concurrency`, `timeout`, `evals`, `judge`,
    `sandbox`, `setup`, `teardown`, `early_exit`. A wrong key or value raises a `ConfigError` naming the file,
    the line and what to write instead.

    Example:
        >>> experiment = define_experiment(model="openai/gpt-5-mini", flags={"prompt": "short"}, runs=3)
        >>> experiment.flags["prompt"]
        'short'
    """
    where = caller_location(1) or "experiments"
    known = set(Experiment.__dataclass_fields__) - {"id", "file", "line"}
    unknown = sorted(set(settings) - known)
    if unknown:
        raise ConfigError(f"{where}: define_experiment(): unknown key {unknown[0]!r}; keys: {', '.join(sorted(known))}")
    _check_numbers(settings, where)
    _check_text_maps(settings, where)
    _check_evals(settings.get("evals"), where)
    model = settings.get("model")
    if model is not None and (not isinstance(model, str) or "/" not in model):
        raise ConfigError(f"{where}: define_experiment(model=...) is `provider/model`, e.g. 'openai/gpt-5-mini'")
    for hook in ("setup", "teardown"):
        if settings.get(hook) is not None and not callable(settings[hook]):
            raise ConfigError(f"{where}: define_experiment({hook}=...) takes a function, got {settings[hook]!r:.60}")
    judge = settings.get("judge")
    if isinstance(judge, str):
        settings["judge"] = JudgeSettings(model=judge)
    elif judge is not None:
        from niceeval._eval.config import parse_judge

        settings["judge"] = parse_judge(judge, where=f"{where}: define_experiment(judge=...)")
    if settings.get("sandbox") is not None:
        from niceeval._eval.config import sandbox_problem

        problem = sandbox_problem(settings["sandbox"])
        if problem is not None:
            raise ConfigError(f"{where}: define_experiment(): sandbox {problem}")
    file, _, line = where.rpartition(":")
    return Experiment(**settings, file=file or where, line=int(line) if line.isdigit() else 0)


def _check_numbers(settings: Mapping[str, Any], where: str) -> None:
    for name, (kind, whole) in _NUMBERS.items():
        value = settings.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float) or (whole and not isinstance(value, int)):
            raise ConfigError(f"{where}: define_experiment({name}=...) takes a {kind.__name__}, got {value!r:.60}")
        if value <= 0:
            raise ConfigError(f"{where}: define_experiment({name}=...) must be positive, got {value!r}")


def _check_text_maps(settings: Mapping[str, Any], where: str) -> None:
    flags = settings.get("flags")
    if flags is not None and not (isinstance(flags, Mapping) and all(isinstance(k, str) for k in flags)):
        raise ConfigError(f"{where}: define_experiment(flags=...) takes a dict of names, e.g. {{'prompt': 'short'}}")
    labels = settings.get("labels")
    if labels is not None and not (
        isinstance(labels, Mapping) and all(isinstance(k, str) and isinstance(v, str) for k, v in labels.items())
    ):
        raise ConfigError(f"{where}: define_experiment(labels=...) takes a dict of words, e.g. {{'team': 'search'}}")


def _check_evals(evals: object, where: str) -> None:
    if evals is None or callable(evals):
        return
    if isinstance(evals, str) or not isinstance(evals, Sequence) or not all(isinstance(e, str) for e in evals):
        raise ConfigError(
            f"{where}: define_experiment(evals=...) takes a list of paths, globs and `tag:NAME`, or a function of "
            f"an eval (EvalRef: id, file, tags) -> bool; got {evals!r:.60}"
        )


class Flags(Mapping[str, Any]):
    """`t.flags`: the experiment's flags. Reading one it does not set is an error naming the flag, the eval and
    the experiments that set flags (a flag an eval reads that no experiment sets is a typo or a missing setting).

    Args:
        values: The running experiment's flags.
        eval_id: The eval reading them.
        experiment: The running experiment's id (None outside an experiment).
        known: Each experiment's id and the flags it sets.
    """

    def __init__(
        self,
        values: Mapping[str, Any],
        *,
        eval_id: str,
        experiment: str | None,
        known: Sequence[tuple[str, tuple[str, ...]]] = (),
    ) -> None:
        self._values = dict(values)
        self._eval_id = eval_id
        self._experiment = experiment
        self._known = known

    def __getitem__(self, name: str) -> Any:
        if name in self._values:
            return self._values[name]
        setting = [f"{exp_id} ({', '.join(names)})" for exp_id, names in self._known if names]
        if self._experiment is None:
            where = "this run is not an experiment's (`niceeval exp` runs experiments/*.py)"
        else:
            where = f"experiment {self._experiment!r} does not set it"
        by = f"experiments that set flags: {'; '.join(setting)}" if setting else "no experiment sets any flag"
        raise UsageError(
            f"eval {self._eval_id} reads t.flags[{name!r}], but {where}; {by}. Set it in the experiment's "
            f"define_experiment(flags={{{name!r}: ...}}), or read it with t.flags.get({name!r}, default)."
        )

    def get(self, name: str, default: Any = None) -> Any:
        """The flag, or `default` when the experiment does not set it."""
        return self._values.get(name, default)

    def __contains__(self, name: object) -> bool:
        return name in self._values

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"Flags({self._values!r})"


@dataclass(frozen=True, kw_only=True, slots=True)
class ExperimentView:
    """What a run is told about the experiment it runs in (`t.experiment`, `t.model`, `t.flags`)."""

    id: str
    model: str | None
    flags: Mapping[str, Any]
    labels: Mapping[str, str]
    known: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """Every experiment found and the flags it sets (named when an eval reads a flag this one does not set)."""
