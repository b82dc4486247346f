"""`niceeval exp [PATH ...]` (run experiments), `niceeval exp list`, `niceeval exp rename OLD NEW`, and
`niceeval accept RUN EVAL_ID [RUN_INDEX]`.

`niceeval exp` takes `niceeval run`'s flags (`cli/_run.add_run_flags`), before or after its paths: `exp` itself
holds them, and its forms (`run`, hidden: a path, or nothing, runs experiments; `list`, `rename`) read theirs. Only
argparse is imported at module level.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from niceeval._core.wording import plural
from niceeval.cli._common import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_TERMINATED,
    EXIT_USAGE,
    add_config_flag,
    add_store_flag,
    open_existing_store,
    project_config,
)
from niceeval.cli._exp_compare import add_exp_compare
from niceeval.cli._run import add_run_flags

if TYPE_CHECKING:
    from niceeval._eval.config import Config
    from niceeval._eval.experiment import Experiment
    from niceeval._run.experiments import ExperimentRun


class _ExperimentForms(argparse._SubParsersAction):  # type: ignore[type-arg]
    """`niceeval exp PATH ...` is `niceeval exp run PATH ...`: a first word that names no form is a path.

    It takes the rest of the command line as it is (argparse's `REMAINDER`, which checks no choice), so a path is
    not refused as an unknown form before this action sees it.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.nargs = argparse.REMAINDER

    def __call__(
        self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any, option: Any = None
    ) -> None:
        if not values or values[0] not in self._name_parser_map:
            values = ["run", *values]
        super().__call__(parser, namespace, values, option)


def add_exp_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`niceeval exp` (and its forms) and `niceeval accept`."""
    exp = commands.add_parser(
        "exp",
        help="run experiments (experiments/*.py): each one suite run tagged with its id, carrying the attempts "
        "recorded before under the same setup; `exp list`, `exp rename OLD NEW`, `exp compare A B`",
    )
    _add_experiment_flags(exp)
    exp.set_defaults(handler=_exp, paths=[])
    forms = exp.add_subparsers(dest="exp_form", action=_ExperimentForms, metavar="[PATH ...] | list | rename")
    run = forms.add_parser("run", argument_default=argparse.SUPPRESS, help="run experiments (the default)")
    run.add_argument("paths", nargs="*", help="experiment files or folders (default: experiments/)")
    _add_experiment_flags(run)
    listing = forms.add_parser("list", help="list the experiments found, with their setup and stored runs")
    listing.add_argument("paths", nargs="*", help="experiment files or folders (default: experiments/)")
    add_config_flag(listing)
    add_store_flag(listing)
    listing.set_defaults(handler=_list)
    rename = forms.add_parser("rename", help="rename an experiment's history in the store (after renaming its file)")
    rename.add_argument("old", metavar="OLD")
    rename.add_argument("new", metavar="NEW")
    add_config_flag(rename)
    add_store_flag(rename)
    rename.set_defaults(handler=_rename)
    add_exp_compare(forms)

    accept = commands.add_parser(
        "accept",
        help="adopt a reviewed attempt of an experiment's earlier run for its current setup (recorded as accepted; "
        "the run is not changed)",
    )
    accept.add_argument("run", metavar="RUN", help="the suite run (id, unique prefix, or `latest`)")
    accept.add_argument("eval_id", metavar="EVAL_ID", help="the eval, as `niceeval show RUN` names it")
    accept.add_argument("run_index", metavar="RUN_INDEX", nargs="?", type=int, default=0, help="the attempt (0)")
    add_config_flag(accept)
    add_store_flag(accept)
    accept.set_defaults(handler=_accept)


def _add_experiment_flags(parser: argparse.ArgumentParser) -> None:
    add_run_flags(parser)
    parser.add_argument(
        "--rerun", action="store_true", help="run every attempt again: carry nothing from the experiment's history"
    )


def _exp(args: argparse.Namespace) -> int:
    from niceeval._core.errors import ConfigError
    from niceeval._run.experiments import ExperimentRun, load_experiments

    for flag, given in (("--resume", args.resume), ("--rerun-failed", args.rerun_failed), ("--run-id", args.run_id),
                        ("--shard", args.shard)):  # fmt: skip
        if given is not None:
            raise ConfigError(
                f"{flag} does not go with experiments: `niceeval exp` carries what earlier runs recorded."
            )
    config = project_config(args)
    experiments = load_experiments(config.root, args.paths)
    known = tuple((e.id, tuple(e.flags)) for e in experiments)
    codes = []
    for experiment in experiments:
        run = ExperimentRun(experiment=experiment, known=known, rerun=args.rerun)
        codes.append(_run_experiment(args, run, config, len(experiments)))
        if codes[-1] in (EXIT_INTERRUPTED, EXIT_TERMINATED):  # Ctrl-C stops them all, not just the one under way
            break
    return max(codes, default=EXIT_OK)


def _run_experiment(args: argparse.Namespace, run: ExperimentRun, config: Config, count: int) -> int:
    """One experiment: its setup, its suite run, its teardown (also after an interruption or a failure)."""
    from niceeval._run.experiments import call_hook
    from niceeval.cli._run import run_command

    exp = run.experiment
    one = argparse.Namespace(**vars(args))
    one.paths = run.targets(config.root, config.evals)
    one.runs = args.runs or exp.runs
    one.budget = args.budget or exp.budget
    one.concurrency = args.concurrency or exp.concurrency
    one.timeout = args.timeout or exp.timeout
    one.experiment = run
    if exp.early_exit and one.runs is not None and not isinstance(one.runs, int):
        from niceeval._core.errors import ConfigError

        raise ConfigError(
            f"{exp.file}:{exp.line}: early_exit=True stops at the first pass, so it does not go with --runs "
            f"{one.runs} (adaptive repeats); give --runs N."
        )
    if exp.early_exit and args.min_pass_rate is None:  # pass@k: one pass in its attempts passes an eval
        one.min_pass_rate = 1 / (one.runs or 1)
    if count > 1:  # one report file per experiment: `report.json` -> `report.<id>.json`
        for name in ("json", "junit", "html"):
            path: Path | None = getattr(args, name)
            setattr(one, name, None if path is None else path.with_name(f"{path.stem}.{exp.id}{path.suffix}"))
    print(f"niceeval: experiment {exp.id} ({exp.file}){_described(exp)}", file=sys.stderr)
    hooks = not args.dry_run
    if hooks and exp.setup is not None and not _hook(exp, "setup", call_hook):
        return EXIT_USAGE
    try:
        return run_command(one)
    finally:
        if hooks and exp.teardown is not None:
            _hook(exp, "teardown", call_hook)


def _hook(exp: Experiment, name: str, call: Any) -> bool:
    """Run the experiment's `setup` or `teardown`; False (and why, on stderr) when it raised."""
    from niceeval._core.errors import user_location

    try:
        call(getattr(exp, name))
    except Exception as exc:
        where = user_location(exc.__traceback__) or f"{exp.file}:{exp.line}"
        then = "its evals did not run" if name == "setup" else "its results are kept"
        print(f"niceeval: {where}: experiment {exp.id}: {name} raised {type(exc).__name__}: {exc}; {then}.",
              file=sys.stderr)  # fmt: skip
        return False
    return True


def _described(exp: Experiment) -> str:
    parts = [f"model {exp.model}"] if exp.model else []
    parts += [f"flags {dict(exp.flags)}"] if exp.flags else []
    parts += [f"labels {dict(exp.labels)}"] if exp.labels else []
    return f": {', '.join(parts)}" if parts else ""


def _list(args: argparse.Namespace) -> int:
    from niceeval._run.experiments import load_experiments
    from niceeval._run.storing import StoreRequest, store_location

    config = project_config(args)
    experiments = load_experiments(config.root, args.paths)
    location = store_location(StoreRequest(flag=args.store, configured=config.store, root=config.root))
    stored: dict[str, str] = {}
    if location is not None and ("://" in location or Path(location).exists()):
        from niceeval.store import Store

        with Store.open(location, root=config.root) as store:
            for exp in experiments:
                runs = store.runs(experiment=exp.id, limit=1000)
                if runs:
                    stored[exp.id] = f"{plural(len(runs), 'suite run')}, latest {runs[0].id}"
    for exp in experiments:
        print(f"{exp.id}  {exp.file}{_described(exp)}  [{stored.get(exp.id, 'no suite run')}]")
    print(plural(len(experiments), "experiment"), file=sys.stderr)
    return EXIT_OK


def _rename(args: argparse.Namespace) -> int:
    from niceeval.store._recorder import Recorder

    with open_existing_store(args) as store:
        recorder = Recorder.of(store)
        try:
            moved = recorder.rename_experiment(args.old, args.new)
        finally:
            recorder.close()
    print(f"experiment {args.old} is now {args.new}: {plural(moved, 'suite run')} moved.")
    if not (project_config(args).root / "experiments" / f"{args.new}.py").is_file():
        print(f"niceeval: rename its file too: experiments/{args.new}.py names the experiment.", file=sys.stderr)
    return EXIT_OK


def _accept(args: argparse.Namespace) -> int:
    from niceeval._run.experiments import acceptance_for

    with open_existing_store(args) as store:
        acceptance, note = acceptance_for(store, project_config(args), args.run, args.eval_id, args.run_index)
        if acceptance is None:
            print(note)
            return EXIT_OK
        from niceeval.store._recorder import Recorder

        recorder = Recorder.of(store)
        try:
            recorded = recorder.accept(acceptance)
        finally:
            recorder.close()
    print(note if recorded else f"already accepted: {note}")
    return EXIT_OK
