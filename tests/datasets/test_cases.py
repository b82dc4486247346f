"""Cases: datasets from lists and files, ids, `t.case`, selection, and bad rows named by file and line."""

from __future__ import annotations

import re
import tracemalloc
from pathlib import Path

import pytest
from pydantic import BaseModel

from niceeval._eval.cases import CaseError, CaseIds, Loading, _dataset, _first_use, _make_case, iter_cases

from ._helpers import run_project, write

ECHO = """\
from niceeval import define_config
config = define_config(agent=lambda message: "echo: " + message)
"""


def cases_of(path: Path, **kwargs: object) -> list[object]:
    return list(iter_cases(path.name, eval_file=path.parent / "x.py", root=path.parent, **kwargs))  # type: ignore[arg-type]


def test_jsonl_rows_become_cases_with_ids_from_the_id_field_else_the_row_index(tmp_path: Path) -> None:
    path = write(tmp_path, "qa.jsonl", '{"id": "capital", "q": "France?"}\n\n{"q": "2+2"}\n')
    cases = cases_of(path)
    assert [c.id for c in cases] == ["capital", "1"]  # type: ignore[attr-defined]
    assert cases[1].data == {"q": "2+2"}  # type: ignore[attr-defined]
    assert cases[1].source.endswith("qa.jsonl:3")  # type: ignore[attr-defined]


def test_json_csv_and_yaml_datasets_read_the_same_rows(tmp_path: Path) -> None:
    json_path = write(tmp_path, "a.json", '[\n  {"id": "a", "q": "x"},\n  {"id": "b", "q": "y"}\n]\n')
    csv_path = write(tmp_path, "a.csv", 'id,q,metadata\na,x,"{""split"": ""golden""}"\nb,y,\n')
    yaml_path = write(tmp_path, "a.yaml", "# rows\n- id: a\n  q: x\n- {id: b, q: y}\n")
    lines = {json_path: ["2", "3"], csv_path: ["2", "3"], yaml_path: ["2", "4"]}
    for path, expected_lines in lines.items():
        cases = cases_of(path)
        assert [(c.id, c.data["q"]) for c in cases] == [("a", "x"), ("b", "y")], path  # type: ignore[attr-defined]
        assert [c.source.rsplit(":", 1)[1] for c in cases] == expected_lines, path  # type: ignore[attr-defined]
    assert cases_of(csv_path)[0].metadata == {"split": "golden"}  # type: ignore[attr-defined]


def test_a_bad_jsonl_row_names_the_file_and_line(tmp_path: Path) -> None:
    path = write(tmp_path, "qa.jsonl", '{"q": 1}\n{"q": 2,}\n')
    with pytest.raises(CaseError, match=r"qa\.jsonl:2: not valid JSON"):
        cases_of(path)


def test_a_row_that_is_not_an_object_is_an_error_at_its_line(tmp_path: Path) -> None:
    path = write(tmp_path, "qa.yaml", "- q: 1\n- just text\n")
    with pytest.raises(CaseError, match=r"qa\.yaml:2: a case is an object"):
        cases_of(path)


def test_a_repeated_case_id_names_both_rows(tmp_path: Path) -> None:
    path = write(tmp_path, "qa.jsonl", '{"id": "a"}\n{"id": "a"}\n')
    with pytest.raises(CaseError, match=r"qa\.jsonl:2: case id 'a' is used twice \(first at .*qa\.jsonl:1\)"):
        cases_of(path)


def test_a_repeated_id_after_other_rows_and_a_bad_one_names_its_first_use(tmp_path: Path) -> None:
    rows = [f'{{"id": "k{i}"}}' for i in range(3000)]
    rows[1200] = '{"id": "k7",'  # cut short: a problem of its own, the other rows still load
    path = write(tmp_path, "qa.jsonl", "\n".join([*rows, '{"id": "k2999"}']) + "\n")
    with pytest.raises(CaseError, match=r"qa\.jsonl:3001: case id 'k2999' is used twice \(first at .*qa\.jsonl:3000\)"):
        cases_of(path, loading=Loading())
    listed = [{"id": "x"}, {"id": "y"}, {"id": 5}, {"id": "5"}]
    with pytest.raises(CaseError, match=r"define_eval\(cases=\[...\]\): row 3: case id '5' is used twice \(first at "):
        list(iter_cases(listed, eval_file=tmp_path / "x.py", root=tmp_path))


def test_case_ids_are_kept_as_hashes_a_shared_hash_is_settled_by_reading_the_rows_again(tmp_path: Path) -> None:
    ids = CaseIds()
    assert [ids.add(f"q{i}") for i in range(20_000)] == [True] * 20_000
    assert (ids.add("q17"), ids.add("q20000")) == (False, True)
    path = write(tmp_path, "qa.jsonl", '{"id": "a"}\n{"id": "b"}\n{"id": "a"}\n')
    dataset = _dataset(path.name, tmp_path / "x.py", tmp_path, None)
    first, second, again = [_make_case(row, dataset.shown, None) for row in dataset.read()]
    assert _first_use(again, dataset, None, None) == first.source  # a real repeat: where the id was first used
    assert _first_use(second, dataset, None, None) is None  # "b" only shares a hash: no row before it used it


def test_case_ids_past_100_000_take_under_24_bytes_a_case() -> None:
    ids = CaseIds()
    tracemalloc.start()
    for i in range(100_000):
        ids.add(f"evals/qa.py::qa[q{i}]")
    before, _ = tracemalloc.get_traced_memory()
    for i in range(100_000, 250_000):
        ids.add(f"evals/qa.py::qa[q{i}]")
    after, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert (after - before) / 150_000 < 24  # a dict of each id and its row's place grew by some 150 bytes a case


def test_a_row_that_does_not_fit_the_case_model_names_its_line_and_field(tmp_path: Path) -> None:
    class Row(BaseModel):
        question: str

    path = write(tmp_path, "qa.jsonl", '{"question": "ok"}\n{"prompt": "no question"}\n')
    with pytest.raises(CaseError, match=r"qa\.jsonl:2: does not fit case_model Row: question: Field required"):
        cases_of(path, model=Row)


def test_a_csv_row_with_too_many_cells_is_an_error_at_its_line(tmp_path: Path) -> None:
    path = write(tmp_path, "qa.csv", "q\nfine\nx,extra\n")
    with pytest.raises(CaseError, match=r"qa\.csv:3: this row has more cells"):
        cases_of(path)


def test_an_unknown_dataset_format_says_which_formats_exist(tmp_path: Path) -> None:
    path = write(tmp_path, "qa.txt", "q\n")
    with pytest.raises(CaseError, match=r"unknown dataset format; use one of \.jsonl"):
        cases_of(path)


def test_each_case_runs_as_its_own_eval_with_t_case_and_metadata_in_the_result(tmp_path: Path) -> None:
    write(tmp_path, "niceeval.config.py", ECHO)
    rows = '{"id": "fr", "q": "Paris", "metadata": {"split": "golden"}}\n{"q": "Rome"}\n'
    write(tmp_path, "evals/data/qa.jsonl", rows)
    write(
        tmp_path,
        "evals/cases_each.py",
        """\
        from niceeval import define_eval
        from niceeval.expect import includes

        @define_eval(cases="data/qa.jsonl")
        async def capital(t):
            await t.send(t.case["q"])
            t.check(t.reply, includes(t.case["q"]))
        """,
    )
    kept = run_project(tmp_path)
    results = kept.by_id()
    assert sorted(results) == ["evals/cases_each.py::capital[1]", "evals/cases_each.py::capital[fr]"]
    first = results["evals/cases_each.py::capital[fr]"]
    assert (first.outcome, first.case_id, first.metadata) == ("passed", "fr", {"split": "golden"})


def test_case_model_makes_t_case_a_model_instance(tmp_path: Path) -> None:
    write(tmp_path, "niceeval.config.py", ECHO)
    write(
        tmp_path,
        "evals/cases_model.py",
        """\
        from pydantic import BaseModel
        from niceeval import define_eval
        from niceeval.expect import equals

        class Row(BaseModel):
            n: int

        @define_eval(cases=[{"n": 1}, {"n": "2"}], case_model=Row)
        def typed(t):
            t.check(isinstance(t.case, Row) and t.case.n + 1, equals(t.case.n + 1))
        """,
    )
    kept = run_project(tmp_path)
    assert [r.outcome for r in kept.results] == ["passed", "passed"]
    ids = sorted(r.eval_id for r in kept.results)
    assert ids == ["evals/cases_model.py::typed[0]", "evals/cases_model.py::typed[1]"]


def test_keyword_and_tags_select_cases(tmp_path: Path) -> None:
    write(tmp_path, "niceeval.config.py", ECHO)
    write(
        tmp_path,
        "evals/cases_pick.py",
        """\
        from niceeval import define_eval

        @define_eval(cases=[{"id": "alpha"}, {"id": "beta", "tags": ["slow"]}, {"id": "gamma"}])
        def pick(t):
            pass
        """,
    )
    assert [r.case_id for r in run_project(tmp_path, keyword="[gamma]").results] == ["gamma"]
    assert [r.case_id for r in run_project(tmp_path, tags=["slow"]).results] == ["beta"]


def test_a_bad_dataset_stops_only_its_eval_and_is_a_problem_naming_file_and_line(tmp_path: Path) -> None:
    write(tmp_path, "niceeval.config.py", ECHO)
    write(tmp_path, "evals/bad.jsonl", '{"q": 1}\n[1, 2]\n')
    write(
        tmp_path,
        "evals/cases_bad.py",
        """\
        from niceeval import define_eval

        @define_eval(cases="bad.jsonl")
        def broken(t):
            pass

        @define_eval
        def fine(t):
            pass
        """,
    )
    kept = run_project(tmp_path)
    assert [r.eval_id for r in kept.results] == ["evals/cases_bad.py::fine"]
    (problem,) = kept.problems
    assert problem.location.endswith("evals/bad.jsonl:2")
    assert "a case is an object" in problem.message and "cases_bad.py::broken did not run" in problem.message
    assert kept.summary is not None and kept.summary.exit_code == 2


def test_an_inline_bad_row_names_the_eval_file_and_the_row_index(tmp_path: Path) -> None:
    write(tmp_path, "niceeval.config.py", ECHO)
    write(
        tmp_path,
        "evals/cases_inline.py",
        """\
        from niceeval import define_eval

        @define_eval(cases=[{"id": "a"}, "oops"])
        def inline(t):
            pass
        """,
    )
    (problem,) = run_project(tmp_path).problems
    assert "cases_inline.py: define_eval(cases=[...])" in problem.location
    assert problem.message.startswith("row 1: a case is an object")


CASES_OF_ROWS = """\
from niceeval import define_eval

@define_eval(cases="rows.jsonl")
def rows(t):
    pass
"""


def test_a_jsonl_row_that_is_not_json_is_reported_at_its_line_and_the_other_rows_run(tmp_path: Path) -> None:
    rows = [f'{{"id": "r{n}", "q": {n}}}' for n in range(6)]
    rows[3] = '{"id": "r3", "q": 3,}'
    write(tmp_path, "evals/rows.jsonl", "\n".join(rows) + "\n")
    write(tmp_path, "evals/cases_rows.py", CASES_OF_ROWS)
    kept = run_project(tmp_path)
    assert sorted(r.eval_id.split("[")[1] for r in kept.results) == ["r0]", "r1]", "r2]", "r4]", "r5]"]
    (problem,) = kept.problems
    assert problem.location.endswith("evals/rows.jsonl:4")
    # the decoder's own words and column differ between Python versions (3.13 names the trailing comma)
    assert re.fullmatch(r"not valid JSON \(.+, column 2[01]\); fix this row \(.*the other cases ran\)", problem.message)
    assert problem.message.endswith("(evals/cases_rows.py::rows: the other cases ran)")
    assert kept.summary is not None and kept.summary.exit_code == 2


def test_a_jsonl_cut_short_runs_its_complete_rows_and_says_it_is_truncated(tmp_path: Path) -> None:
    write(tmp_path, "evals/rows.jsonl", '{"id": "a"}\n{"id": "b"}\n{"id": "c", "q": "half')
    write(tmp_path, "evals/cases_rows.py", CASES_OF_ROWS)
    kept = run_project(tmp_path)
    assert sorted(r.eval_id for r in kept.results) == ["evals/cases_rows.py::rows[a]", "evals/cases_rows.py::rows[b]"]
    (problem,) = kept.problems
    assert problem.location.endswith("evals/rows.jsonl:3")
    assert problem.message.startswith("the file ends inside this row (its last line has no newline")


def test_a_complete_last_row_without_a_newline_is_a_row(tmp_path: Path) -> None:
    path = write(tmp_path, "qa.jsonl", '{"id": "a"}\n{"id": "b"}')
    assert [c.id for c in cases_of(path)] == ["a", "b"]  # type: ignore[attr-defined]


def test_a_jsonl_row_that_is_not_utf8_is_an_error_at_its_line(tmp_path: Path) -> None:
    path = tmp_path / "qa.jsonl"
    path.write_bytes(b'{"id": "a"}\n{"id": "\xff"}\n{"id": "c"}\n')
    loading = Loading()
    assert [c.id for c in cases_of(path, loading=loading)] == ["a", "c"]  # type: ignore[attr-defined]
    (problem,) = loading.problems
    assert (problem.line, problem.detail.split(" (")[0]) == (2, "not UTF-8 text")
    assert problem.detail.endswith("save the file as UTF-8")
    with pytest.raises(CaseError, match=r"qa\.jsonl:2: not UTF-8 text"):
        cases_of(path)  # without a Loading to collect them, the first bad row raises
