"""Cases written in the viewer, found like code evals: their code is written out and imported, ids `ui::NAME`.

`niceeval run` with no paths runs every case beside the code evals; `niceeval run ui::NAME` (or `ui::` for all)
picks cases on the command line. The code imported is exactly what `niceeval cases export` writes, at
`.niceeval/ui_cases.py`, so a traceback or an assertion's location points at a file the user can open.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from niceeval._run.discovery import Discovery, EvalEntry, LoadError, import_eval_file

PREFIX = "ui::"
SOURCE_FILE = Path(".niceeval") / "ui_cases.py"


@dataclass(frozen=True, slots=True)
class Targets:
    """The command line's targets, split into eval paths and viewer-written cases."""

    paths: list[str]
    """Files and folders (with `::name`) to discover code evals in."""
    cases: list[str] | None
    """Case names asked for; `None` for every case; `[]` for none."""


def split_targets(targets: Sequence[str], default_paths: Sequence[str]) -> Targets:
    """No targets: the default paths and every case. Otherwise the paths given, and the `ui::NAME` cases given."""
    if not targets:
        return Targets(paths=list(default_paths), cases=None)
    paths = [t for t in targets if not t.startswith(PREFIX)]
    names = [t.removeprefix(PREFIX) for t in targets if t.startswith(PREFIX)]
    return Targets(paths=paths, cases=None if "" in names else names)


def add_ui_cases(discovery: Discovery, root: Path, store_location: str | None, wanted: list[str] | None) -> None:
    """Append the store's cases (all, or `wanted`) to `discovery` as evals with ids `ui::NAME`.

    A store that does not exist yet holds no cases (it is not created just to be read).
    """
    if wanted == [] or store_location is None:
        return
    from niceeval.store import may_hold_cases

    missing = "://" not in store_location and not (root / store_location).exists()
    if missing or not may_hold_cases(store_location, root):  # most projects have none: SQLAlchemy stays unloaded
        _missing(discovery, wanted)
        return
    from niceeval.store import Store
    from niceeval.store.cases import CaseBook, cases_module

    with Store.open(store_location, root=root) as store:
        cases = [stored.case for stored in CaseBook(store).cases()]
    if wanted is not None:
        known = {case.name for case in cases}
        _missing(discovery, [name for name in wanted if name not in known])
        cases = [case for case in cases if case.name in wanted]
    if not cases:
        return
    source = root / SOURCE_FILE
    source.parent.mkdir(parents=True, exist_ok=True)
    source.write_text(cases_module(cases), encoding="utf-8")
    for spec in import_eval_file(root, source):
        discovery.evals.append(EvalEntry(id=f"{PREFIX}{spec.name}", spec=spec))


def _missing(discovery: Discovery, names: list[str] | None) -> None:
    for name in names or []:
        discovery.errors.append(
            LoadError(
                file=f"{PREFIX}{name}",
                line=None,
                message="no case of that name in the results store; `niceeval view` lists the cases (Cases tab).",
            )
        )
