"""Planning: each discovered eval becomes one eval per case and variant, with an id the runner, store and shards key on.

Ids: `file.py::fn` (plain), `file.py::fn[case_id]` (cases), `file.py::fn[prompt=short]` (variants),
`file.py::fn[case_id][prompt=short,model=a]` (both). The variants of one case share a *group*, the id without
the variant part: max-score and select-best compare the runs of a group.

A dataset is read once into its table of cases; the planned evals are small views on it (the case and the
variant are shared, not copied), so memory grows with the table and one small record per planned eval.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from niceeval._core.errors import UsageError
from niceeval._eval.variants import Variant, parse_variants
from niceeval._run.discovery import EvalEntry, LoadError

if TYPE_CHECKING:
    from niceeval._eval.cases import Case, Loading


@dataclass(kw_only=True)
class Plan:
    """The planned evals, and the datasets or variant settings that could not be used."""

    evals: list[EvalEntry] = field(default_factory=list)
    errors: list[LoadError] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """What a peer's suite file says that niceeval has no equivalent for (listed once, never dropped silently)."""


def _variants_of(entry: EvalEntry, suite_variants: tuple[Variant, ...]) -> tuple[Variant, ...]:
    return entry.spec.variants or suite_variants


def _expand_one(entry: EvalEntry, cases: Sequence[Case] | None, variants: tuple[Variant, ...]) -> Iterator[EvalEntry]:
    base = entry.id
    for case in cases if cases is not None else (None,):
        group = f"{base}[{case.id}]" if case is not None else base
        if not variants:
            yield EvalEntry(id=group, spec=entry.spec, case=case, eval_group=entry.eval_group)
            continue
        for index, variant in enumerate(variants):
            yield EvalEntry(
                id=f"{group}[{variant.name}]",
                spec=entry.spec,
                case=case,
                variant=variant,
                group=group,
                group_size=len(variants),
                group_index=index,
                eval_group=entry.eval_group,
            )


def _loaded(loading: Loading, entry: EvalEntry, plan: Plan) -> None:
    plan.notes.extend(note for note in loading.notes if note not in plan.notes)
    for problem in loading.problems:
        message = f"{problem.detail} ({entry.id}: the other cases ran)"
        plan.errors.append(LoadError(file=problem.file, line=problem.line, message=message))


def _declared_cases(entry: EvalEntry, cases: list[Case], plan: Plan) -> list[Case]:
    """The cases whose `assert:` entries are usable; each bad row is an error of its own, the others run."""
    from niceeval._eval.declared import EDIT_DISTANCES, DeclaredError, parse_entries, row_assertions

    kept = []
    for case in cases:
        try:
            declared = parse_entries(row_assertions(case.data))
        except DeclaredError as exc:
            file, _, line = case.source.rpartition(":")
            at = int(line) if line.isdigit() else None
            message = f"{exc} (case {entry.id}[{case.id}] did not run; the other cases did)"
            plan.errors.append(LoadError(file=file if at else case.source, line=at, message=message))
            continue
        if any(item.type.name in EDIT_DISTANCES for item in declared):
            from niceeval.expect._runtime import edit_distance  # noqa: F401 (rapidfuzz, now rather than in the suite's loop)
        kept.append(case)
    return kept


def expand(entries: Sequence[EvalEntry], *, root: Path, suite_variants: Any = None) -> Plan:
    """Expand evals over their cases and variants; a bad dataset is an error for that eval only.

    Args:
        entries: The evals discovery found.
        root: The project root (datasets resolve beside the eval file first, then here).
        suite_variants: The config's `variants=` (an eval's own `variants=` wins).
    """
    plan = Plan()
    try:
        shared = parse_variants(suite_variants, "niceeval.config.py: define_config(variants=...)")
    except UsageError as exc:
        plan.errors.append(LoadError(file="niceeval.config.py", line=None, message=str(exc)))
        shared = ()
    for entry in entries:
        cases: list[Case] | None = None
        if entry.spec.cases is not None:
            cases = _cases(entry, entry.spec.cases, root, plan)
            if cases is None:
                continue
            cases = _declared_cases(entry, cases, plan)
        unclustered = _case_without_cluster(entry, cases)
        if unclustered is not None:
            plan.errors.append(unclustered)
            continue
        plan.evals.extend(_expand_one(entry, cases, _variants_of(entry, shared)))
    return plan


def _cases(entry: EvalEntry, source: str | Path | Sequence[Any], root: Path, plan: Plan) -> list[Case] | None:
    """The eval's cases, read once (None: the dataset cannot be used; the error is in `plan`). Datasets and their
    readers load only for evals with `cases=`: a plain run does not import them."""
    from niceeval._eval.cases import CaseError, Loading, iter_cases

    loading = Loading()
    try:
        return list(
            iter_cases(
                source,
                eval_file=entry.spec.file,
                root=root,
                model=entry.spec.case_model,
                loading=loading,
                reading=entry.spec.reading,
            )
        )
    except CaseError as exc:
        plan.errors.append(
            LoadError(file=exc.file, line=exc.line, message=f"{exc.detail} (eval {entry.id} did not run)")
        )
        return None
    finally:
        _loaded(loading, entry, plan)


def _case_without_cluster(entry: EvalEntry, cases: Sequence[Case] | None) -> LoadError | None:
    """`define_eval(cluster="source")` over cases: every case must have that field (a typo would silently make
    each case its own cluster)."""
    field_name = entry.spec.cluster
    if field_name is None or cases is None:
        return None
    missing = next((case for case in cases if case.label(field_name) is None), None)
    if missing is None:
        return None
    return LoadError(
        file=entry.file,
        line=entry.spec.line,
        message=f"define_eval(cluster={field_name!r}) names a case field, and the case at {missing.source} has no "
        f"{field_name!r}: add it to every case, or name another field (eval {entry.id} did not run)",
    )
