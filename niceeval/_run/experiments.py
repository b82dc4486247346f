"""Experiments for `niceeval exp`: loading `experiments/*.py`, each one's evals, slot identities, and what a new run
carries from the ones before.

An experiment runs as one suite run of the ordinary runner, tagged with its id: its settings override the config's
(`ExperimentRun.configure`), its `evals=` picks the evals (`select`), and every eval x case x attempt (a slot) gets
an identity digest (`identities`). A slot recorded before under the same identity is carried (`carry`): the suite
run records it by reference, and only the missing attempts run.
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from niceeval._core.errors import ConfigError, relative, user_location
from niceeval._core.results import Provenance, RunResult
from niceeval._eval.experiment import EvalRef, Experiment, ExperimentView
from niceeval._run.discovery import EvalEntry

if TYPE_CHECKING:
    from niceeval._eval.config import Config
    from niceeval.store import AcceptanceInfo, Store

EXPERIMENTS_DIR = "experiments"
_GLOB = set("*?[")


def load_experiments(root: Path, paths: Sequence[str] = ()) -> list[Experiment]:
    """The experiments of `paths` (files or folders; default `experiments/`), each with its id (the file's stem).

    Raises:
        ConfigError: a path that does not exist, a file that fails to load or defines no (or two) experiments,
            two files with one id (both named).
    """
    files: list[Path] = []
    for text in paths or [EXPERIMENTS_DIR]:
        path = Path(text) if Path(text).is_absolute() else root / text
        if not path.exists():
            hint = "write one with define_experiment(...) in experiments/<id>.py" if not paths else "check the path"
            raise ConfigError(f"no experiment file or folder at {relative(str(path))}: {hint}.")
        if path.is_file():
            files.append(path)
        else:
            files += sorted(p for p in path.rglob("*.py") if not p.name.startswith("_"))
    found: dict[str, Experiment] = {}
    for file in dict.fromkeys(f.resolve() for f in files):
        experiment = _load_file(root, file)
        if experiment.id in found:
            raise ConfigError(
                f"two experiments have the id {experiment.id!r}: {found[experiment.id].file} and {experiment.file}; "
                "an experiment's id is its file's name, so rename one of the files."
            )
        found[experiment.id] = experiment
    return list(found.values())


def _load_file(root: Path, file: Path) -> Experiment:
    shown = relative(str(file))
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    name = f"niceeval_experiment_{file.stem}"
    spec = importlib.util.spec_from_file_location(name, file)
    if spec is None or spec.loader is None:
        raise ConfigError(f"cannot load {shown} as Python.")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pydantic models in the file look their module up there
    try:
        spec.loader.exec_module(module)
    except ConfigError:
        sys.modules.pop(name, None)
        raise
    except SyntaxError as exc:
        sys.modules.pop(name, None)
        raise ConfigError(f"{shown}:{exc.lineno}: syntax error: {exc.msg}") from None
    except Exception as exc:
        sys.modules.pop(name, None)
        where = user_location(exc.__traceback__) or shown
        raise ConfigError(f"{where}: {shown} raised {type(exc).__name__}: {exc}. Fix the experiment file.") from None
    defined = list({id(v): v for v in vars(module).values() if isinstance(v, Experiment)}.values())
    if len(defined) != 1:
        count = "defines no experiment" if not defined else f"defines {len(defined)} experiments"
        raise ConfigError(f"{shown} {count}; write one `experiment = define_experiment(...)` per file.")
    return replace(defined[0], id=file.stem, file=shown)


@dataclass(frozen=True, kw_only=True)
class Carry:
    """What a new run of an experiment takes from the ones before, slot by slot."""

    results: list[RunResult] = field(default_factory=list)
    """The carried and accepted slots' records, renumbered as this suite run's first attempts of each eval."""
    done: frozenset[tuple[str, int]] = frozenset()
    """Their `(eval_id, run_index)`: not run again."""

    def count(self, eval_id: str) -> int:
        return sum(1 for key in self.done if key[0] == eval_id)


@dataclass(frozen=True, kw_only=True)
class ExperimentRun:
    """One experiment as `niceeval exp` runs it.

    Args:
        experiment: The experiment.
        known: Every experiment loaded and the flags it sets (`t.flags` names them when one is missing).
        rerun: `--rerun`: carry nothing, run every slot.
    """

    experiment: Experiment
    known: tuple[tuple[str, tuple[str, ...]], ...] = ()
    rerun: bool = False

    @property
    def id(self) -> str:
        return self.experiment.id

    def view(self) -> ExperimentView:
        exp = self.experiment
        return ExperimentView(id=exp.id, model=exp.model, flags=exp.flags, labels=exp.labels, known=self.known)

    def targets(self, root: Path, config_evals: Sequence[str]) -> list[str]:
        """The discovery targets of `evals=`: its paths and globs' files, else the config's `evals`.

        Raises:
            ConfigError: a glob that matches no file (named with the experiment's file).
        """
        chosen = self.experiment.evals
        if chosen is None or callable(chosen):
            return list(config_evals)
        paths = [text for text in chosen if not text.startswith("tag:")]
        if not paths:
            return list(config_evals)
        targets: list[str] = []
        for text in paths:
            if not _GLOB & set(text):
                targets.append(text)
                continue
            matched = sorted(str(p.relative_to(root)) for p in root.glob(text) if p.suffix == ".py" or p.is_dir())
            if not matched:
                raise ConfigError(
                    f"{self.experiment.file}:{self.experiment.line}: evals={text!r} matches no file under "
                    f"{relative(str(root)) or '.'}; fix the pattern."
                )
            targets += matched
        return targets

    def select(self, entries: Sequence[EvalEntry]) -> list[EvalEntry]:
        """The entries `evals=` keeps: its `tag:NAME`s (any of them), its predicate."""
        chosen = self.experiment.evals
        if chosen is None:
            return list(entries)
        if callable(chosen):
            return [e for e in entries if self._keeps(chosen, e)]
        tags = {text.removeprefix("tag:") for text in chosen if text.startswith("tag:")}
        return [e for e in entries if not tags or tags & set(e.tags)]

    def _keeps(self, predicate: Any, entry: EvalEntry) -> bool:
        try:
            return bool(predicate(EvalRef(id=entry.id, file=entry.file, tags=entry.tags)))
        except Exception as exc:
            raise ConfigError(
                f"{self.experiment.file}:{self.experiment.line}: the evals= predicate raised {type(exc).__name__}: "
                f"{exc} on eval {entry.id}. Fix the predicate."
            ) from None

    def configure(self, config: Config) -> Config:
        """The config with the experiment's agent, judge, sandbox, timeout and concurrency over it."""
        exp = self.experiment
        update: dict[str, Any] = {}
        if exp.agent is not None:
            update["agent"] = exp.agent
        if exp.judge is not None:
            update["judge"] = config.judge.model_copy(update=exp.judge.model_dump(exclude_unset=True))
        if exp.sandbox is not None:
            update["sandbox"] = exp.sandbox
        if exp.timeout is not None:
            update["timeout"] = exp.timeout
        if exp.concurrency is not None:
            update["concurrency"] = exp.concurrency
        return config.model_copy(update=update)

    def identities(self, config: Config, entries: Sequence[EvalEntry], grader: str | None) -> dict[str, str]:
        """Each entry's slot identity: its source and case, the experiment's configuration, niceeval's major
        version (`config` already `configure`d)."""
        from niceeval.store._recorder import niceeval_version

        setup = {
            **self.experiment.settings(),
            "agent": agent_identity(config.agent, has_model=self.experiment.model is not None),
            "judge_model": grader or config.judge.model,
            "niceeval": niceeval_version().split(".")[0],
        }
        digest = _digest(json.dumps(setup, sort_keys=True, default=repr))
        found = {}
        for entry in entries:
            own = agent_identity(entry.spec.agent, has_model=False) if entry.spec.agent is not None else ""
            case = _case_text(entry)
            found[entry.id] = _digest("\n".join([digest, entry.id, own, _source(entry), case]))
        return found

    def carry(self, store: Store, entries: Sequence[EvalEntry], runs: int, identities: Mapping[str, str]) -> Carry:
        """The slots recorded before under the same identity (accepted ones first, then the latest executed),
        up to each eval's `runs` attempts; none with `--rerun`. Attempts that errored or timed out are not
        carried: they run again."""
        if self.rerun:
            return Carry()
        sources: dict[tuple[str, str], list[tuple[str, int, Provenance]]] = {}
        for acceptance in store.acceptances(self.id):
            key = (acceptance.eval_id, acceptance.identity)
            sources.setdefault(key, []).append((acceptance.suite_run_id, acceptance.run_index, "accepted"))
        for slot in store.slots(self.id):
            if slot.error is None and slot.identity is not None:
                key = (slot.eval_id, slot.identity)
                sources.setdefault(key, []).append((slot.suite_run_id, slot.run_index, "carried"))
        results: list[RunResult] = []
        for entry in entries:
            identity = identities[entry.id]
            chosen = list({(s, i): p for s, i, p in sources.get((entry.id, identity), [])}.items())
            for index, ((suite_run_id, run_index), provenance) in enumerate(chosen[: entry.spec.runs or runs]):
                record = store.eval_run(suite_run_id, entry.id, run_index)
                results.append(
                    record.model_copy(
                        update={
                            "run_index": index,
                            "identity": identity,
                            "provenance": provenance,
                            "carried_from": suite_run_id,
                            "carried_index": run_index,
                        }
                    )
                )
        return Carry(results=results, done=frozenset((r.eval_id, r.run_index) for r in results))


def agent_identity(agent: object, *, has_model: bool) -> str:
    """What stands for an agent in a slot's identity: a function's source, a model agent's prompt and tools (and
    its model unless the experiment sets one), another adapter's class."""
    if agent is None:
        return ""
    options = getattr(agent, "options", None)
    if options is not None and hasattr(options, "tools") and hasattr(options, "model"):
        output = getattr(options.output, "__qualname__", None)
        parts = [type(agent).__qualname__, str(options.system), ",".join(sorted(options.tools)), str(output)]
        return "|".join(parts if has_model else [*parts, str(options.model)])
    factory = getattr(agent, "factory", None)
    target = factory if callable(factory) else agent
    if inspect.isfunction(target) or inspect.ismethod(target):
        try:
            return f"{target.__module__}.{target.__qualname__}:{_digest(inspect.getsource(target))}"
        except (OSError, TypeError):
            return f"{target.__module__}.{target.__qualname__}"
    return type(agent).__qualname__


def _source(entry: EvalEntry) -> str:
    try:
        return inspect.getsource(entry.spec.fn)
    except (OSError, TypeError):
        file = Path(entry.spec.file)
        return file.read_text(errors="replace") if file.is_file() else entry.id


def _case_text(entry: EvalEntry) -> str:
    if entry.case is None:
        return ""
    data = entry.case.data
    dumped = data.model_dump(mode="json") if hasattr(data, "model_dump") else data
    return json.dumps([entry.case.id, dumped], sort_keys=True, default=repr)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def call_hook(hook: Any) -> None:
    """Run an experiment's `setup` or `teardown` (a plain function, or an async one) on the host."""
    returned = hook()
    if inspect.isawaitable(returned):
        import anyio

        async def wait() -> None:
            await returned

        anyio.run(wait)


def acceptance_for(
    store: Store, config: Config, ref: str, eval_id: str, run_index: int
) -> tuple[AcceptanceInfo | None, str]:
    """What `niceeval accept RUN EVAL_ID RUN_INDEX` records, and what to tell the user; None when there is nothing
    to record (the attempt stands for the experiment's current setup already).

    Raises:
        ConfigError: the run ran no experiment, has no such attempt, the attempt errored or timed out, or the
            experiment or the eval is gone (nothing is recorded).
    """
    from datetime import UTC, datetime

    from niceeval.store import AcceptanceInfo

    detail = store.run(ref)
    run_id, experiment_id = detail.run.id, detail.run.experiment
    if experiment_id is None:
        raise ConfigError(f"suite run {run_id} ran no experiment; `niceeval accept` adopts attempts of `niceeval exp`.")
    found = [s for s in detail.eval_runs if s.eval_id == eval_id and s.run_index == run_index]
    if not found:
        raise ConfigError(
            f"suite run {run_id} has no attempt {run_index} of eval {eval_id!r}; `niceeval show {run_id}` lists them."
        )
    slot = found[0]
    if slot.error is not None:
        what = "timed out" if slot.error_kind == "timeout" else "errored"
        raise ConfigError(
            f"attempt {run_index} of {eval_id} in suite run {run_id} {what} ({slot.error}): only an attempt that ran "
            "to its verdict can be accepted. Nothing was recorded."
        )
    source = (slot.carried_from, slot.carried_index) if slot.provenance != "executed" else (run_id, run_index)
    experiment = _current(config.root, experiment_id, run_id)
    configured = experiment.configure(config)
    entry = _current_entry(config, experiment, eval_id)
    identity = experiment.identities(configured, [entry], None)[eval_id]
    said = f"attempt {run_index} of {eval_id} from suite run {run_id}"
    if identity == slot.identity:
        return None, f"{said} already stands for experiment {experiment_id}'s setup: the next run carries it."
    suite_run_id, index = source
    assert suite_run_id is not None and index is not None
    acceptance = AcceptanceInfo(
        experiment=experiment_id,
        eval_id=eval_id,
        identity=identity,
        suite_run_id=suite_run_id,
        run_index=index,
        accepted_at=datetime.now(UTC),
    )
    return acceptance, f"accepted {said} for experiment {experiment_id}: its next run carries it as accepted."


def _current(root: Path, experiment_id: str, run_id: str) -> ExperimentRun:
    file = root / EXPERIMENTS_DIR / f"{experiment_id}.py"
    if not file.is_file():
        raise ConfigError(
            f"suite run {run_id} ran experiment {experiment_id!r}, which has no file {relative(str(file))} now; "
            "an attempt is accepted for an experiment's current setup."
        )
    return ExperimentRun(experiment=_load_file(root, file.resolve()))


def _current_entry(config: Config, experiment: ExperimentRun, eval_id: str) -> EvalEntry:
    from niceeval._run.discovery import discover
    from niceeval._run.plan import expand

    found = discover(config.root, experiment.targets(config.root, config.evals))
    entries = experiment.select(list(expand(found.evals, root=config.root, suite_variants=config.variants).evals))
    for entry in entries:
        if entry.id == eval_id:
            return entry
    raise ConfigError(f"eval {eval_id!r} is not among experiment {experiment.id}'s evals now: nothing to accept.")
