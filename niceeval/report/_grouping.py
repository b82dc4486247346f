"""Misses repeated across `--runs N`, grouped: the console, the HTML report and the GitHub annotations show each
distinct miss once, with the runs it hit."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

from niceeval._core.assertion import AssertionResult
from niceeval._core.errors import ErrorInfo
from niceeval._core.results import RunResult

_SHOWN_RUNS = 60


@dataclass(kw_only=True, slots=True)
class Miss:
    """One distinct miss (an error, or a failed assertion) and the 0-based indices of the runs that had it."""

    error: ErrorInfo | None = None
    assertion: AssertionResult | None = None
    runs: list[int] = field(default_factory=list)


def _key(item: ErrorInfo | AssertionResult) -> Hashable:
    if isinstance(item, ErrorInfo):
        return ("error", item.type, item.message, item.location)
    # Identical as reported: same check, same verdict, same words (judge reasons that differ stay apart).
    return (
        "assertion",
        item.name,
        item.severity,
        item.shortfall(),
        item.location,
        item.expected,
        item.actual,
        item.reason,
    )


class MissGroups:
    """Distinct misses collected as runs finish, in any order (the HTML reporter keeps one per eval, not the runs).

    Bounded by the distinct misses, not the runs: a miss repeated by every one of 100 runs is kept once.
    """

    def __init__(self) -> None:
        self._groups: dict[Hashable, Miss] = {}
        self._first: dict[Hashable, tuple[int, int]] = {}
        """Where each miss first appeared: (run index, position in that run), to order them as `group_misses`."""

    def add(self, run: RunResult) -> None:
        if run.outcome in ("passed", "skipped"):
            return
        items: list[ErrorInfo | AssertionResult] = [run.error] if run.error is not None else []
        items += [a for a in run.assertions if a.state == "failed"]
        for position, item in enumerate(items):
            key = _key(item)
            miss = self._groups.get(key)
            if miss is None:
                miss = self._groups[key] = Miss(error=item) if isinstance(item, ErrorInfo) else Miss(assertion=item)
            if run.run_index not in miss.runs:
                miss.runs.append(run.run_index)
            self._first[key] = min(self._first.get(key, (run.run_index, position)), (run.run_index, position))

    def misses(self) -> list[Miss]:
        """The distinct misses, in order of first appearance (by run index), each with its runs in order."""
        for miss in self._groups.values():
            miss.runs.sort()
        return [self._groups[key] for key in sorted(self._groups, key=self._first.__getitem__)]


def group_misses(runs: Sequence[RunResult]) -> list[Miss]:
    """The distinct misses of runs that did not pass, in order of first appearance (runs taken in run order)."""
    groups = MissGroups()
    for run in runs:
        groups.add(run)
    return groups.misses()


def runs_text(indices: Sequence[int]) -> str:
    """1-based run numbers with consecutive ones as ranges: `run 3`, `runs 1-3,5 (4×)`."""
    if len(indices) == 1:
        return f"run {indices[0] + 1}"
    spans: list[str] = []
    start = prev = indices[0]
    for index in [*indices[1:], None]:
        if index is not None and index == prev + 1:
            prev = index
            continue
        spans.append(f"{start + 1}" if start == prev else f"{start + 1}-{prev + 1}")
        if index is not None:
            start = prev = index
    listed = ",".join(spans)
    if len(listed) > _SHOWN_RUNS:
        listed = listed[:_SHOWN_RUNS].rsplit(",", 1)[0] + ",..."
    return f"runs {listed} ({len(indices)}×)"


def container_lines(runs: Sequence[RunResult]) -> list[str]:
    """One line per container the runs of an eval worked in (Docker sandboxes), with the runs that shared it and
    its image: `docker container 1a2b3c4d5e6f (runs 1-3), image niceeval-build:9f.. 253 MB, built in 4.1 s`."""
    by_container: dict[str, list[RunResult]] = {}
    for run in runs:
        if run.sandbox is not None and run.sandbox.container is not None:
            by_container.setdefault(run.sandbox.container, []).append(run)
    lines = []
    for container, shared in by_container.items():
        record = shared[0].sandbox
        assert record is not None
        image = f"image {record.image}"
        if record.image_size_bytes:
            image += f", {record.image_size_bytes / 1e6:.0f} MB"
        if record.image_build_s is not None:
            image += f", built in {record.image_build_s:g} s" + (" (now)" if record.image_built_now else "")
        used = runs_text(sorted(run.run_index for run in shared))
        lines.append(f"{record.kind} container {container} ({used}), {image}")
    return lines
