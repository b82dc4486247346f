"""How `--runs`, `--min-pass-rate`, `scored` and `--strict` combine: console, JSON, JUnit and exit code agree.

The rule (docs/guide.md, "Running"): a run counts as a pass when its outcome is `passed`, or `scored` without
`--strict`; an eval fails when its pass rate is under `--min-pass-rate` (1.0 by default), is `scored` when the
rate is met but some run was not a clean pass, and `passed` otherwise. Only a failed eval fails the suite.
"""

from __future__ import annotations

import re

import pytest

from ._project import Project, Result

# `six_of_eight` misses on the runs numbered 6 and 7 (whatever order they finish in): a gate miss for
# `gate_misses`, a soft miss for `soft_misses`. `always_soft` misses softly on every run.
EVALS = """\
import itertools

from niceeval import define_eval
from niceeval.expect import satisfies

_gate, _soft, _always = itertools.count(), itertools.count(), itertools.count()


@define_eval
async def gate_misses(t):
    t.check(next(_gate), satisfies(lambda n: n < 6, "one of the first six"))


@define_eval
async def soft_misses(t):
    t.check(next(_soft), satisfies(lambda n: n < 6, "one of the first six").at_least(0.5))


@define_eval
async def always_soft(t):
    t.check(next(_always), satisfies(lambda n: n < 0, "never").at_least(0.5))
"""

_SUMMARY = re.compile(r"(\d+) passed, (\d+) scored, (\d+) failed, (\d+) skipped")


def _console_counts(result: Result) -> dict[str, int]:
    found = _SUMMARY.search(result.stdout)
    assert found is not None, result.stdout
    return dict(zip(("passed", "scored", "failed", "skipped"), map(int, found.groups()), strict=True))


def _console_status(result: Result, name: str) -> str:
    labels = {"PASS": "passed", "SCORED": "scored", "FAIL": "failed", "SKIP": "skipped"}
    found = re.search(rf"^ (PASS|SCORED|FAIL|SKIP) +\S+::{name}(\s|$)", result.stdout, re.MULTILINE)
    assert found is not None, result.stdout
    return labels[found.group(1)]


def _junit_failures(result: Result, name: str) -> int:
    cases = [c for c in result.junit().iter("testcase") if c.get("name", "").split("[")[0] == name]
    assert cases, f"no testcase for {name}"
    return sum(1 for c in cases if c.find("failure") is not None)


def _check_agreement(result: Result, name: str, status: str, code: int) -> None:
    """Every reporter says `status` for the eval, and the exit code is `code`."""
    assert result.code == code, result.output
    assert result.report()["exit_code"] == code
    assert result.eval(name)["status"] == status
    assert _console_status(result, name) == status
    summary = result.report()["summary"]
    counts = _console_counts(result)
    assert counts == {o: summary[o] for o in ("passed", "scored", "failed", "skipped")}
    assert counts[status] == 1
    assert (_junit_failures(result, name) > 0) == (status == "failed")
    junit_root = result.junit()
    assert (int(junit_root.get("failures", "0")) > 0) == (code == 1)


@pytest.mark.parametrize(
    ("name", "flags", "status", "code", "rate"),
    [
        # one run: a soft miss is scored, and failed under --strict (the console, JSON and JUnit say so)
        ("always_soft", ("--runs", "1"), "scored", 0, 1.0),
        ("always_soft", ("--runs", "1", "--strict"), "failed", 1, 0.0),
        # eight runs, two gate misses: the pass rate decides, with or without --strict
        ("gate_misses", ("--runs", "8"), "failed", 1, 0.75),
        ("gate_misses", ("--runs", "8", "--min-pass-rate", "0.7"), "scored", 0, 0.75),
        ("gate_misses", ("--runs", "8", "--min-pass-rate", "0.7", "--strict"), "scored", 0, 0.75),
        ("gate_misses", ("--runs", "8", "--min-pass-rate", "0.8", "--strict"), "failed", 1, 0.75),
        # eight runs, two soft misses: they count as passes unless --strict
        ("soft_misses", ("--runs", "8"), "scored", 0, 1.0),
        ("soft_misses", ("--runs", "8", "--strict"), "failed", 1, 0.75),
        ("soft_misses", ("--runs", "8", "--strict", "--min-pass-rate", "0.7"), "scored", 0, 0.75),
        ("soft_misses", ("--runs", "8", "--strict", "--min-pass-rate", "0.8"), "failed", 1, 0.75),
    ],
)
def test_reporters_and_exit_code_agree_on_the_eval_status(
    project: Project, name: str, flags: tuple[str, ...], status: str, code: int, rate: float
) -> None:
    project.write("evals/rates.py", EVALS)
    result = project.run(f"evals/rates.py::{name}", *flags)
    _check_agreement(result, name, status, code)
    assert result.eval(name)["pass_rate"] == pytest.approx(rate)


def test_runs_tolerated_by_the_pass_rate_are_not_junit_failures(project: Project) -> None:
    project.write("evals/rates.py", EVALS)
    result = project.run("evals/rates.py::gate_misses", "--runs", "8", "--min-pass-rate", "0.7")
    cases = [c for c in result.junit().iter("testcase") if c.get("name", "").startswith("gate_misses[run ")]
    tolerated = [c for c in cases if "tolerated" in (c.findtext("system-out") or "")]
    assert len(cases) == 8 and len(tolerated) == 2
    assert "6/8 runs passed" in (tolerated[0].findtext("system-out") or "")


def test_console_shows_the_runs_that_count_as_passes_under_strict(project: Project) -> None:
    project.write("evals/rates.py", EVALS)
    result = project.run("evals/rates.py::soft_misses", "--runs", "8", "--strict", "--min-pass-rate", "0.7")
    assert "SCORED evals/rates.py::soft_misses  6/8 runs passed (75%)" in result.stdout
