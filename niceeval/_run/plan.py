"""Planning: each discovered eval becomes one eval per case and variant, with an id the runner, store and shards key on.

Ids: `file.py::fn` (plain), `file.py::fn[case_id]` (cases), `file.py::fn[prompt=short]` (variants),
`file.py::fn[case_id][prompt=short,model=a]` (both). The variants of one case share a *group*, the id without
the variant part: max-score and select-best compare the runs of a group.

A dataset is streamed: planning reads it once, row by row, for its errors and its count, and the plan
(`EvalStream`) reads it again at each pass, so no case is held (docs/design/datasets.md).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from niceeval._core.errors import UsageError
from niceeval._eval.variants import Variant, parse_variants
from niceeval._run.discovery import EvalEntry, LoadError

if TYPE_CHECKING:
    from niceeval._eval.cases import Case, Loading, Stamp


class EvalStream:
    """Planned evals read afresh at each pass over them: a dataset's rows are parsed as they are needed, never held.

    Iterating yields the evals one at a time (a million cases cost the memory of one); iterating again reads the
    datasets again. `len()` is the count the planning pass took (a filtered stream counts itself once, on first
    asking). A list is a stream too: `EvalStream.of(entries)`.
    """

    def __init__(self, read: Callable[[], Iterator[EvalEntry]], *, count: int | None = None) -> None:
        self._read = read
        self._count = count

    @classmethod
    def of(cls, entries: Iterable[EvalEntry]) -> EvalStream:
        """`entries` as a stream (a stream as it is; a list or tuple is read at each pass, anything else once)."""
        if isinstance(entries, EvalStream):
            return entries
        held = entries if isinstance(entries, list | tuple) else list(entries)
        return cls(lambda: iter(held), count=len(held))

    def __iter__(self) -> Iterator[EvalEntry]:
        return self._read()

    def __len__(self) -> int:
        if self._count is None:
            self._count = sum(1 for _ in self)
        return self._count

    def __bool__(self) -> bool:
        return self._count > 0 if self._count is not None else next(iter(self), None) is not None

    def filtered(self, keep: Callable[[EvalEntry], bool]) -> EvalStream:
        """The evals `keep` keeps, as a stream of its own (the reading is not repeated to filter)."""
        read = self._read
        return EvalStream(lambda: filter(keep, read()))


@dataclass(kw_only=True)
class Plan:
    """The planned evals, and the datasets or variant settings that could not be used."""

    evals: EvalStream = field(default_factory=lambda: EvalStream.of([]))
    errors: list[LoadError] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """What a peer's suite file says that niceeval has no equivalent for (listed once, never dropped silently)."""


def _variants_of(entry: EvalEntry, suite_variants: tuple[Variant, ...]) -> tuple[Variant, ...]:
    return entry.spec.variants or suite_variants


def _expand_one(entry: EvalEntry, cases: Iterable[Case] | None, variants: tuple[Variant, ...]) -> Iterator[EvalEntry]:
    base = entry.id
    for case in cases if cases is not None else (None,):
        group = f"{base}[{case.id}]" if case is not None else base
        if not variants:
            yield EvalEntry(id=group, spec=entry.spec, case=case, eval_group=entry.eval_group, file=entry.file)
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
                file=entry.file,
            )


def _loaded(loading: Loading, entry: EvalEntry, plan: Plan) -> None:
    plan.notes.extend(note for note in loading.notes if note not in plan.notes)
    for problem in loading.problems:
        message = f"{problem.detail} ({entry.id}: the other cases ran)"
        plan.errors.append(LoadError(file=problem.file, line=problem.line, message=message))


def _declared_error(entry: EvalEntry, case: Case) -> LoadError | None:
    """The case's `assert:` entries, if unusable: an error of its own (the case does not run, the others do)."""
    from niceeval._eval.declared import EDIT_DISTANCES, DeclaredError, parse_entries, row_assertions

    try:
        declared = parse_entries(row_assertions(case.data))
    except DeclaredError as exc:
        file, _, line = case.source.rpartition(":")
        at = int(line) if line.isdigit() else None
        message = f"{exc} (case {entry.id}[{case.id}] did not run; the other cases did)"
        return LoadError(file=file if at else case.source, line=at, message=message)
    if any(item.type.name in EDIT_DISTANCES for item in declared):
        from niceeval.expect._runtime import edit_distance  # noqa: F401 (rapidfuzz, now rather than in the suite's loop)
    return None


@dataclass(frozen=True, kw_only=True, slots=True)
class _Source:
    """One discovered eval as planned: the variants it runs under, its cases left out (bad `assert:` entries), and
    its dataset file as the planning pass checked its case ids (later passes over it unchanged keep no id)."""

    entry: EvalEntry
    variants: tuple[Variant, ...]
    left_out: frozenset[str] = frozenset()
    checked: Stamp | None = None


def expand(entries: Sequence[EvalEntry], *, root: Path, suite_variants: Any = None) -> Plan:
    """Expand evals over their cases and variants; a bad dataset is an error for that eval only.

    This is the planning pass: every dataset is read once, row by row, to find its bad rows and count the evals;
    the plan's `evals` read the datasets again as they are iterated (see `EvalStream`).

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
    sources: list[_Source] = []
    count = 0
    for entry in entries:
        variants = _variants_of(entry, shared)
        if entry.spec.cases is None:
            sources.append(_Source(entry=entry, variants=variants))
            count += max(1, len(variants))
            continue
        counted = _counted(entry, root, plan)
        if counted is None:
            continue
        cases, left_out, checked = counted
        sources.append(_Source(entry=entry, variants=variants, left_out=left_out, checked=checked))
        count += cases * max(1, len(variants))
    plan.evals = EvalStream(lambda: _expanded(sources, root), count=count)
    return plan


def _expanded(sources: list[_Source], root: Path) -> Iterator[EvalEntry]:
    for source in sources:
        entry = source.entry
        cases = None if entry.spec.cases is None else _read_again(entry, root, source)
        yield from _expand_one(entry, cases, source.variants)


def _reading(entry: EvalEntry, root: Path, loading: Loading, checked: Stamp | None = None) -> Iterator[Case]:
    from niceeval._eval.cases import iter_cases

    assert entry.spec.cases is not None
    return iter_cases(
        entry.spec.cases,
        eval_file=entry.spec.file,
        root=root,
        model=entry.spec.case_model,
        loading=loading,
        reading=entry.spec.reading,
        checked=checked,
    )


def _counted(entry: EvalEntry, root: Path, plan: Plan) -> tuple[int, frozenset[str], Stamp | None] | None:
    """The planning pass over an eval's dataset: its usable cases counted, the ids of those whose `assert:` entries
    are unusable (each an error in `plan`), and the file as this pass checked its case ids (`Loading.checked`);
    None: the dataset cannot be used (the error is in `plan`). Datasets and their readers load only for evals with
    `cases=`: a plain run does not import them."""
    from niceeval._eval.cases import CaseError, Loading

    loading = Loading()
    count, left_out, unclustered = 0, set[str](), None
    try:
        for case in _reading(entry, root, loading):
            if (error := _declared_error(entry, case)) is not None:
                plan.errors.append(error)
                left_out.add(case.id)
                continue
            if unclustered is None and entry.spec.cluster is not None and case.label(entry.spec.cluster) is None:
                unclustered = _case_without_cluster(entry, case)
            count += 1
    except CaseError as exc:
        plan.errors.append(
            LoadError(file=exc.file, line=exc.line, message=f"{exc.detail} (eval {entry.id} did not run)")
        )
        return None
    finally:
        _loaded(loading, entry, plan)
    if unclustered is not None:
        plan.errors.append(unclustered)
        return None
    return count, frozenset(left_out), loading.checked


def _read_again(entry: EvalEntry, root: Path, source: _Source) -> Iterator[Case]:
    """An eval's cases on a later pass: the rows the planning pass found usable (its problems were reported then).
    An unchanged file is not checked for repeated ids again (planning did). A dataset edited since, so that it no
    longer reads (or repeats an id), or edited while this pass reads it, ends there, with one line on stderr."""
    from niceeval._eval.cases import CaseError, Loading

    try:
        for case in _reading(entry, root, Loading(), source.checked):
            if case.id not in source.left_out:
                yield case
    except CaseError as exc:
        print(f"niceeval: {exc} (the dataset changed after planning; {entry.id} stops here)", file=sys.stderr)


def _case_without_cluster(entry: EvalEntry, missing: Case) -> LoadError:
    """`define_eval(cluster="source")` over cases: every case must have that field (a typo would silently make
    each case its own cluster)."""
    field_name = entry.spec.cluster
    return LoadError(
        file=entry.file,
        line=entry.spec.line,
        message=f"define_eval(cluster={field_name!r}) names a case field, and the case at {missing.source} has no "
        f"{field_name!r}: add it to every case, or name another field (eval {entry.id} did not run)",
    )
