"""`niceeval exp --dry-run`: what each experiment would carry and run (imported by `niceeval run`'s dry run, which
`niceeval exp` goes through)."""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from niceeval._core.wording import plural
from niceeval.cli._common import EXIT_OK

if TYPE_CHECKING:
    from niceeval._eval.config import Config
    from niceeval._run.discovery import EvalEntry
    from niceeval._run.experiments import ExperimentRun


def experiment_plan(
    config: Config, args: argparse.Namespace, entries: Sequence[EvalEntry], identities: Mapping[str, str]
) -> int:
    """`niceeval exp --dry-run`: each eval's attempts, those carried (and from which runs) and those to run."""
    from niceeval._run.experiments import Carry
    from niceeval._run.storing import StoreRequest, store_location

    run: ExperimentRun = args.experiment
    runs = args.runs or 1
    carry = Carry()
    location = store_location(
        StoreRequest(flag=args.store, off=args.no_store, configured=config.store, root=config.root)
    )
    if location is not None and ("://" in location or Path(location).exists()):
        from niceeval.store import Store

        with Store.open(location, root=config.root) as store:
            carry = run.carry(store, entries, runs, identities)
    total = carried = 0
    for entry in entries:
        wanted = entry.spec.runs or runs
        held = carry.count(entry.id)
        sources = sorted({r.carried_from or "" for r in carry.results if r.eval_id == entry.id})
        origin = f" (from {', '.join(sources)})" if held else ""
        print(f"  {entry.id}: {held} carried{origin}, {wanted - held} to run")
        total, carried = total + wanted, carried + held
    print(f"experiment {run.id}: {plural(total, 'attempt')}: {carried} carried, {total - carried} to run")
    return EXIT_OK
