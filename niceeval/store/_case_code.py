"""Viewer-written cases as ordinary `define_eval` code: what `niceeval cases export` writes and `niceeval run` runs.

The runner imports exactly this code (written to `.niceeval/ui_cases.py`), so an exported case behaves as it did
in the viewer. Every string from the case reaches the code through `repr()`, which always makes a valid Python
literal: a prompt cannot close its string and add code. Names are checked identifiers, prefixed so that no case
name can shadow an import or be a keyword.
"""

from __future__ import annotations

from collections.abc import Sequence

from niceeval.store._cases import UiCase

HEADER = '''"""Test cases written in the niceeval viewer ({count}), as `niceeval cases export` wrote them.

Each runs against the config's agent and judge: the rounds in order, a judge rubric per round that has criteria,
then the expected tools. Edit freely: this file is now ordinary eval code.
"""

from niceeval import EvalContext, define_eval
'''
LABEL_CHARS = 60


def function_name(case: UiCase) -> str:
    """The Python function a case becomes (`ui_` + its name: never a keyword, never an imported name)."""
    return f"ui_{case.name}"


def round_label(number: int, criteria: str) -> str:
    """The name of a round's judge assertion in reports: `round 1: <the criteria, shortened>`."""
    flat = " ".join(criteria.split())
    return f"round {number}: {flat if len(flat) <= LABEL_CHARS else flat[: LABEL_CHARS - 1] + chr(0x2026)}"


def case_source(case: UiCase) -> str:
    """One case as a `define_eval` function."""
    options = [f"name={case.name!r}", f"tags={['ui', *case.tags]!r}"]
    if case.description:
        options.append(f"description={case.description!r}")
    lines = [f"@define_eval({', '.join(options)})", f"async def {function_name(case)}(t: EvalContext) -> None:"]
    for number, step in enumerate(case.rounds, start=1):
        if case.revival and number == 2:
            lines.append("    await t.revive()  # close the session after round 1; continue from storage")
        lines.append(f"    await t.send({step.prompt!r})")
        if step.criteria:
            label = round_label(number, step.criteria)
            lines.append(f"    t.judge.rubric({step.criteria!r}).at_least({step.threshold!r}).label({label!r})")
    lines += [f"    t.called_tool({tool!r})" for tool in case.expected_tools]
    return "\n".join(lines) + "\n"


def cases_module(cases: Sequence[UiCase]) -> str:
    """A module holding every case, ready to write as `evals/ui_cases.py`."""
    parts = [HEADER.format(count=len(cases))]
    parts += [case_source(case) for case in cases]
    return "\n\n".join(parts)
