"""`Store.runs_df()`, `.evals_df(run)`, `.assertions_df(run)`: the store as pandas or polars DataFrames."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from niceeval import AssertionResult, RunResult
from niceeval._core.results import Spend
from niceeval.store import Store
from niceeval.store._frames import ASSERTION_COLUMNS, EVAL_COLUMNS, RUN_COLUMNS

from .test_store import full_result, planned, record, result


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    with Store.open(store_url) as opened:
        yield opened


def two_assertions(eval_id: str, run_index: int, scores: tuple[float, float]) -> RunResult:
    return RunResult(
        eval_id=eval_id,
        file="evals/a.py",
        line=3,
        run_index=run_index,
        outcome="passed" if min(scores) >= 1 else "failed",
        duration_s=0.5,
        case_id="c1",
        assertions=[
            AssertionResult(name=f"check{n}", severity="gate", score=s, threshold=1.0,
                            state="passed" if s >= 1 else "failed", location="evals/a.py:5")
            for n, s in enumerate(scores)
        ],
        agent_spend=Spend(calls=2, tokens=30, input_tokens=20, output_tokens=10, cost=0.003),
    )  # fmt: skip


def test_evals_df_has_one_row_per_eval_run_with_the_documented_columns(store: Store) -> None:
    runs = [
        two_assertions("evals/a.py::b", 0, (1.0, 1.0)),
        two_assertions("evals/a.py::b", 1, (1.0, 0.0)),
        result("evals/a.py::a", "skipped", score=1.0),
    ]
    record(store, "r1", runs, plan=planned("evals/a.py::a", "evals/a.py::b"))
    frame = store.evals_df("r1")
    assert tuple(frame.columns) == EVAL_COLUMNS
    assert len(frame) == 3
    assert frame[["eval_id", "run_index", "outcome"]].values.tolist() == [
        ["evals/a.py::a", 0, "skipped"],
        ["evals/a.py::b", 0, "passed"],
        ["evals/a.py::b", 1, "failed"],
    ]
    assert frame["mean_score"].tolist() == [1.0, 1.0, 0.5]
    assert frame["assertions"].tolist() == [1, 2, 2]
    assert frame["failed_assertions"].tolist() == [0, 0, 1]
    assert frame["tags"].tolist() == [["t"], ["t"], ["t"]]
    assert frame["case_id"].tolist()[1:] == ["c1", "c1"]
    assert frame["agent_cost"].tolist()[1:] == [0.003, 0.003]
    assert set(frame["run_id"]) == {"r1"}


def test_evals_df_names_the_error_and_an_eval_run_without_assertions(store: Store) -> None:
    bare = RunResult(eval_id="evals/a.py::bare", file="evals/a.py", line=1, outcome="passed", duration_s=0.1)
    record(store, "r1", [full_result(), bare])
    frame = store.evals_df("latest", as_="polars")
    assert frame.columns == list(EVAL_COLUMNS)
    rows = {row["eval_id"]: row for row in frame.iter_rows(named=True)}
    assert rows["evals/a.py::refund"]["error"] == "ValueError: boom"
    assert rows["evals/a.py::refund"]["judge_cached"] == 1
    assert rows["evals/a.py::bare"]["mean_score"] is None
    assert rows["evals/a.py::bare"]["assertions"] == 0


def test_assertions_df_has_one_row_per_assertion(store: Store) -> None:
    record(store, "r1", [two_assertions("evals/a.py::b", 0, (1.0, 0.25)), full_result()])
    frame = store.assertions_df("r1")
    assert tuple(frame.columns) == ASSERTION_COLUMNS
    assert frame[["eval_id", "position", "name", "state", "score"]].values.tolist() == [
        ["evals/a.py::b", 0, "check0", "passed", 1.0],
        ["evals/a.py::b", 1, "check1", "failed", 0.25],
        ["evals/a.py::refund", 0, "rubric", "failed", 0.6],
    ]
    judged = frame.iloc[2]
    assert (judged["severity"], judged["reason"], judged["expected"], judged["actual"]) == (
        "soft", "too curt", "polite", "k."
    )  # fmt: skip
    assert bool(judged["optional"]) is True


def test_runs_df_has_one_row_per_suite_run_latest_first(store: Store) -> None:
    record(store, "old", [result("evals/a.py::a")])
    record(store, "new", [result("evals/a.py::a"), result("evals/a.py::b", "failed", score=0.0)])
    frame = store.runs_df()
    assert tuple(frame.columns) == RUN_COLUMNS
    assert frame[["run_id", "runs_done", "passed", "failed", "pass_rate"]].values.tolist() == [
        ["new", 2, 1, 1, 0.5],
        ["old", 1, 1, 0, 1.0],
    ]
    assert store.runs_df(limit=1, as_="polars")["run_id"].to_list() == ["new"]


def test_frames_of_an_empty_store_have_their_columns(store: Store) -> None:
    assert tuple(store.runs_df().columns) == RUN_COLUMNS
    assert store.runs_df(as_="polars").columns == list(RUN_COLUMNS)


def test_an_unknown_frame_kind_is_refused(store: Store) -> None:
    with pytest.raises(ValueError, match=r"as_=\.\.\.\) takes 'pandas' or 'polars', got 'arrow'"):
        store.runs_df(as_="arrow")  # type: ignore[arg-type]


@pytest.mark.parametrize("library", ["pandas", "polars"])
def test_a_missing_library_names_the_extra_to_install(library: str, tmp_path: object) -> None:
    code = (
        f"import sys; sys.modules[{library!r}] = None\n"
        "from niceeval.store import Store\n"
        f"store = Store.open({json.dumps(str(tmp_path))} + '/r.db')\n"
        f"store.runs_df(as_={library!r})\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert (
        f"ImportError: Store.runs_df(as_={library!r}) needs {library}, which is not installed: "
        "run pip install 'niceeval[analysis]'"
    ) in done.stderr


def test_the_frame_libraries_are_imported_only_when_a_frame_is_asked_for(tmp_path: object) -> None:
    code = (
        "import sys\nfrom niceeval.store import Store\n"
        f"store = Store.open({json.dumps(str(tmp_path))} + '/r.db')\nstore.runs(limit=1)\n"
        "print(sorted(name for name in ('pandas', 'polars') if name in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "[]", done.stderr


def test_the_documented_columns_are_the_frames_columns() -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "store.md").read_text()
    documented = {
        match[1]: tuple(re.findall(r"`(\w+)`", match[2]))
        for match in re.finditer(r"^\| `(\w+_df)`[^|]*\| (.*) \|$", page, re.M)
    }
    assert documented == {"runs_df": RUN_COLUMNS, "evals_df": EVAL_COLUMNS, "assertions_df": ASSERTION_COLUMNS}
