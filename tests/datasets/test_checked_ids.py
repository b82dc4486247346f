"""The repeated-id check is made once, by the planning pass: a later pass over the file unchanged keeps no id; a file
edited before a later pass is checked again, one edited while a later pass reads it ends that pass at the first row
of the next block read."""

from __future__ import annotations

import json
import re
import sys
import tracemalloc
from pathlib import Path

import pytest

from niceeval._eval.cases import CaseIds, Loading, Stamp, iter_cases
from niceeval._run.discovery import discover
from niceeval._run.plan import EvalStream, expand

from ._helpers import write

EVAL = """\
from niceeval import define_eval


@define_eval(cases="qa.jsonl", agent=lambda message: message)
def qa(t):
    t.check(t.case["answer"], lambda answer: True)
"""


def _rows(path: Path, ids: list[str]) -> None:
    path.write_text("".join(json.dumps({"id": i, "input": f"question {i}", "answer": i}) + "\n" for i in ids))


def _plan(root: Path, size: int) -> EvalStream:
    write(root, "evals/qa.py", EVAL)
    _rows(root / "evals" / "qa.jsonl", [f"q{i}" for i in range(size)])
    plan = expand(discover(root, ["evals"]).evals, root=root)
    assert plan.errors == []
    return plan.evals


def _walk_peak(evals: EvalStream) -> tuple[int, int]:
    """The evals one pass yields, and the most memory the pass held at once beyond what was held before it."""
    tracemalloc.start()
    try:
        start, _ = tracemalloc.get_traced_memory()
        count = sum(1 for _ in evals)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return count, peak - start


def test_a_later_pass_over_an_unchanged_dataset_keeps_nothing_per_case(tmp_path: Path) -> None:
    small = _plan(tmp_path / "small", 1_000)
    large = _plan(tmp_path / "large", 30_000)
    small_count, small_peak = _walk_peak(small)
    large_count, large_peak = _walk_peak(large)
    assert (small_count, large_count) == (1_000, 30_000)
    # the id check's hashes cost some 2 MB at 30,000 cases (65,536 arrays once they spread); one row at a time is
    # all a trusting pass holds, so thirty times the cases is no more memory than one walk's row and case
    assert large_peak - small_peak < 64 * 1024, (small_peak, large_peak)


def test_planning_records_the_jsonl_file_it_checked_and_other_datasets_are_always_checked(tmp_path: Path) -> None:
    path = write(tmp_path, "qa.jsonl", '{"id": "a"}\n{"id": "b"}\n')
    loading = Loading()
    assert [c.id for c in iter_cases(path.name, eval_file=tmp_path / "x.py", root=tmp_path, loading=loading)] == [
        "a",
        "b",
    ]
    assert loading.checked == Stamp.of(path) and loading.checked is not None
    listed = Loading()
    list(iter_cases([{"id": "a"}], eval_file=tmp_path / "x.py", root=tmp_path, loading=listed))
    assert listed.checked is None
    for name, text in {"qa.yaml": "- id: a\n- id: b\n", "qa.json": '[{"id": "a"}, {"id": "b"}]'}.items():
        whole = Loading()  # read whole, and maybe a peer's config naming other files: no stamp, checked each pass
        list(iter_cases(write(tmp_path, name, text).name, eval_file=tmp_path / "x.py", root=tmp_path, loading=whole))
        assert whole.checked is None
    stopped = Loading()
    cases = iter_cases(path.name, eval_file=tmp_path / "x.py", root=tmp_path, loading=stopped)
    next(cases)
    cases.close()  # a pass that did not read to the end vouches for nothing
    assert stopped.checked is None


def test_a_dataset_edited_to_repeat_an_id_before_a_later_pass_is_checked_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    evals = _plan(tmp_path, 3)
    _rows(tmp_path / "evals" / "qa.jsonl", ["q0", "q1", "q0", "q2"])
    assert [e.id for e in evals] == ["evals/qa.py::qa[q0]", "evals/qa.py::qa[q1]"]
    err = capsys.readouterr().err
    assert re.search(r"qa\.jsonl:3: case id 'q0' is used twice \(first at \S*qa\.jsonl:1\)", err)
    assert "the dataset changed after planning; evals/qa.py::qa stops here" in err


def test_a_dataset_edited_while_a_later_pass_reads_it_ends_that_pass_without_running_a_row_twice(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    evals = _plan(tmp_path, 3_000)  # some 150 KB: three reads of 64 KiB
    path = tmp_path / "evals" / "qa.jsonl"
    walk = iter(evals)
    assert next(walk).id == "evals/qa.py::qa[q0]"
    with path.open("r+") as rewritten:  # in place, the reader's handle sees it: a row put first shifts the rest
        rewritten.write("".join(json.dumps({"id": i, "input": "x", "answer": i}) + "\n" for i in ["new", "q0", "q1"]))
    after = [e.id for e in walk]
    # the rows of the block read before the edit are the planned ones (not one stat a row: some 1,190 rows given
    # after the edit); the next read finds the file changed and ends the pass at its first row
    assert 1_000 < len(after) < 1_400 and after == [f"evals/qa.py::qa[q{i}]" for i in range(1, len(after) + 1)]
    err = capsys.readouterr().err
    first_unread = len(after) + 2  # the line of the row the pass stopped at
    assert f"qa.jsonl:{first_unread}: the file changed while it was read again, after its case ids were checked" in err
    assert "run again to use the edited file (the dataset changed after planning; evals/qa.py::qa stops here)" in err


def test_the_planning_check_keeps_under_6_bytes_a_case_past_100_000() -> None:
    ids = CaseIds()
    tracemalloc.start()
    try:
        for i in range(100_000):
            ids.add(f"evals/qa.py::qa[q{i}]")
        before, _ = tracemalloc.get_traced_memory()
        added = [ids.add(f"evals/qa.py::qa[q{i}]") for i in range(100_000, 250_000)]
        after, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert added.count(True) == 150_000 and ids.add("evals/qa.py::qa[q7]") is False
    assert (after - before - sys.getsizeof(added)) / 150_000 < 6  # 8-byte hashes in 65,536 arrays took some 19
