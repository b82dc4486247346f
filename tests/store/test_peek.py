"""The cases probe: a run learns that a SQLite store holds no viewer case without importing SQLAlchemy; anything
it cannot read cleanly is left to the store itself (a "maybe", never a silent "no")."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from niceeval.store import Store
from niceeval.store._cases import CaseBook, CaseRound, UiCase
from niceeval.store._peek import may_hold_cases

STORE = ".niceeval/results.db"


def make_store(root: Path, *cases: UiCase) -> None:
    with Store.open(STORE, root=root) as store:
        for case in cases:
            CaseBook(store).create(case)


def test_a_store_without_cases_holds_none(tmp_path: Path) -> None:
    make_store(tmp_path)
    assert may_hold_cases(STORE, tmp_path) is False


def test_a_store_with_a_case_may_hold_cases(tmp_path: Path) -> None:
    make_store(tmp_path, UiCase(name="hello", rounds=[CaseRound(prompt="hi")]))
    assert may_hold_cases(STORE, tmp_path) is True


def test_a_deleted_case_does_not_count(tmp_path: Path) -> None:
    make_store(tmp_path, UiCase(name="hello", rounds=[CaseRound(prompt="hi")]))
    with Store.open(STORE, root=tmp_path) as store:
        CaseBook(store).delete("hello", expected_version=1)
    assert may_hold_cases(STORE, tmp_path) is False


def test_the_probe_leaves_no_files_behind(tmp_path: Path) -> None:
    make_store(tmp_path)
    before = sorted(p.name for p in (tmp_path / ".niceeval").iterdir())
    may_hold_cases(STORE, tmp_path)
    assert sorted(p.name for p in (tmp_path / ".niceeval").iterdir()) == before


def test_a_file_that_is_not_a_store_is_left_to_the_store(tmp_path: Path) -> None:
    (tmp_path / "notes.db").write_text("not a database, just notes\n" * 10)
    assert may_hold_cases("notes.db", tmp_path) is True


def test_a_store_of_an_older_schema_is_left_to_the_store(tmp_path: Path) -> None:
    with sqlite3.connect(tmp_path / "old.db") as connection:
        connection.execute("CREATE TABLE suite_runs (id TEXT PRIMARY KEY)")
    connection.close()
    assert may_hold_cases("old.db", tmp_path) is True


def test_a_sqlite_url_is_read_like_a_path(tmp_path: Path) -> None:
    make_store(tmp_path)
    assert may_hold_cases(f"sqlite:///{tmp_path / STORE}", tmp_path) is False
    assert may_hold_cases(f"sqlite:///{STORE}", tmp_path) is False


def test_other_stores_are_left_to_the_store(tmp_path: Path) -> None:
    make_store(tmp_path)
    assert may_hold_cases("postgresql://user@localhost/db", tmp_path) is True
    assert may_hold_cases(f"sqlite:///{tmp_path / STORE}?timeout=5", tmp_path) is True
    assert may_hold_cases("sqlite:///:memory:", tmp_path) is True
    assert may_hold_cases("mysql://user@localhost/db", tmp_path) is True


def test_a_postgresql_store_is_asked_through_its_driver(postgres: object, tmp_path: Path) -> None:
    url = postgres.database()  # type: ignore[attr-defined]
    assert may_hold_cases(url, tmp_path) is True  # no schema yet: left to the store
    with Store.open(url) as store:
        assert may_hold_cases(url, tmp_path) is False
        CaseBook(store).create(UiCase(name="hello", rounds=[CaseRound(prompt="hi")]))
        assert may_hold_cases(url, tmp_path) is True
        CaseBook(store).delete("hello", expected_version=1)
        assert may_hold_cases(url, tmp_path) is False
