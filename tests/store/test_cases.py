"""Cases written in the viewer, as the store keeps them: versions, deletes that keep history, refused overwrites."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pydantic import ValidationError

from niceeval.store import Store
from niceeval.store._case_code import case_source, cases_module
from niceeval.store._cases import CaseBook, CaseError, CaseRound, UiCase, explain


def case(name: str = "refund", *prompts: str, **fields: object) -> UiCase:
    rounds = [CaseRound(prompt=p, criteria="Polite.") for p in (prompts or ("I want a refund",))]
    return UiCase(name=name, rounds=rounds, **fields)  # type: ignore[arg-type]


@pytest.fixture
def book(store_url: str) -> Iterator[CaseBook]:
    with Store.open(store_url) as store:
        yield CaseBook(store)


def test_a_created_case_is_listed_at_version_1(book: CaseBook) -> None:
    book.create(case(tags=["billing"]))
    (stored,) = book.cases()
    assert stored.version == 1 and stored.case.tags == ["billing"] and stored.case.eval_id == "ui::refund"


def test_a_name_is_taken_once(book: CaseBook) -> None:
    book.create(case())
    with pytest.raises(CaseError, match="exists already"):
        book.create(case())


def test_every_edit_is_a_new_version_in_the_history(book: CaseBook) -> None:
    book.create(case())
    book.update(case("refund", "Where is my refund?"), expected_version=1)
    assert book.get("refund").case.rounds[0].prompt == "Where is my refund?"  # type: ignore[union-attr]
    assert [(v.version, v.action) for v in book.history("refund")] == [(2, "edited"), (1, "created")]


def test_an_edit_of_a_stale_version_is_refused(book: CaseBook) -> None:
    book.create(case())
    book.update(case("refund", "second"), expected_version=1)
    with pytest.raises(CaseError, match="changed by someone else meanwhile"):
        book.update(case("refund", "third"), expected_version=1)
    assert book.get("refund").case.rounds[0].prompt == "second"  # type: ignore[union-attr]


def test_a_deleted_case_is_gone_but_its_history_stays(book: CaseBook) -> None:
    book.create(case())
    book.delete("refund", expected_version=1)
    assert book.cases() == [] and book.get("refund") is None
    assert [v.action for v in book.history("refund")] == ["deleted", "created"]


def test_a_deleted_name_can_be_used_again_and_continues_its_history(book: CaseBook) -> None:
    book.create(case())
    book.delete("refund", expected_version=1)
    book.create(case("refund", "again"))
    assert [(v.version, v.action) for v in book.history("refund")] == [(3, "created"), (2, "deleted"), (1, "created")]


@pytest.mark.parametrize(
    ("fields", "where", "says"),
    [
        ({"name": "Refund Me"}, "name", "lowercase letters"),
        ({"name": "1st"}, "name", "starting with a letter"),
        ({"rounds": []}, "rounds", "1 to 20 rounds"),
        ({"rounds": [{"prompt": "   "}]}, "rounds.0.prompt", "message the user sends"),
        ({"rounds": [{"prompt": "hi", "threshold": 1.5}]}, "rounds.0.threshold", "between 0 and 1"),
        ({"rounds": [{"prompt": "hi", "threshold": "high"}]}, "rounds.0.threshold", "write a number"),
        ({"tags": ["no spaces"]}, "tags", "tags are words"),
        ({"expected_tools": ["lookup order"]}, "expected_tools", "named like a function"),
        ({"revival": True}, "case", "add a second round"),
    ],
)
def test_a_bad_case_is_refused_with_a_message_for_its_field(fields: dict[str, object], where: str, says: str) -> None:
    data = {"name": "refund", "rounds": [{"prompt": "hi"}], **fields}
    with pytest.raises(ValidationError) as caught:
        UiCase.model_validate(data)
    errors = explain(caught.value)
    assert where in errors and says in errors[where], errors


def test_case_code_is_valid_python_whatever_the_text() -> None:
    hostile = 'end """ \'\'\' \\ and\nimport os; os.system("x")'
    code = cases_module([case("pass", hostile, tags=["x"], description=hostile, expected_tools=["lookup"])])
    namespace: dict[str, object] = {}
    exec(compile(code, "ui_cases.py", "exec"), namespace)
    assert "os" not in namespace  # the hostile text stayed inside string literals: no import ran
    spec = namespace["ui_pass"]
    assert spec.name == "pass" and spec.description == hostile  # type: ignore[attr-defined]


def test_case_code_follows_the_rounds_with_revival_between_round_1_and_2() -> None:
    code = case_source(case("refund", "first", "second", revival=True, expected_tools=["lookup_order"]))
    lines = [line.strip() for line in code.splitlines()]
    assert lines[2:] == [
        "await t.send('first')",
        "t.judge.rubric('Polite.').at_least(0.7).label('round 1: Polite.')",
        "await t.revive()  # close the session after round 1; continue from storage",
        "await t.send('second')",
        "t.judge.rubric('Polite.').at_least(0.7).label('round 2: Polite.')",
        "t.called_tool('lookup_order')",
    ]
