"""Opening a store: schema made once and equal to the migrations', refusals that say what to do."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from sqlalchemy import create_engine, inspect, text

from niceeval.store import Store, StoreError, SuiteRunStart
from niceeval.store._open import migrate, upgrade_with_alembic
from niceeval.store._schema import SCHEMA_REVISION, metadata

from .test_store import recording


def _schema_diff(url: str) -> list[object]:
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return list(compare_metadata(MigrationContext.configure(conn), metadata))
    finally:
        engine.dispose()


def test_migrations_build_the_same_schema_as_the_tables(store_url: str) -> None:
    engine = create_engine(store_url)
    with engine.begin() as conn:
        upgrade_with_alembic(conn)
    engine.dispose()
    assert _schema_diff(store_url) == []


def test_a_fresh_store_gets_the_tables_and_the_current_revision(store_url: str) -> None:
    Store.open(store_url).close()
    assert _schema_diff(store_url) == []
    engine = create_engine(store_url)
    with engine.connect() as conn:
        assert conn.execute(text("select version_num from alembic_version")).scalar() == SCHEMA_REVISION
    engine.dispose()


def test_opening_a_current_store_again_keeps_its_runs(store_url: str) -> None:
    with Store.open(store_url) as store, recording(store) as recorder:
        recorder.begin(SuiteRunStart(id="kept"), [])
    with Store.open(store_url) as store:
        assert [r.id for r in store.runs()] == ["kept"]


def test_two_processes_opening_a_fresh_store_at_once_make_it_once(store_url: str) -> None:
    errors: list[BaseException] = []

    def open_once() -> None:
        try:
            Store.open(store_url).close()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=open_once) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert _schema_diff(store_url) == []


def test_a_store_from_a_newer_niceeval_is_refused_with_its_version(store_url: str) -> None:
    Store.open(store_url).close()
    engine = create_engine(store_url)
    with engine.begin() as conn:
        conn.execute(text("update alembic_version set version_num = '0099'"))
        conn.execute(text("update store_info set value = '9.1.0' where key = 'niceeval_version'"))
    engine.dispose()
    with pytest.raises(StoreError, match=r"written by niceeval 9\.1\.0 \(schema 0099\).*Upgrade niceeval"):
        Store.open(store_url)


def test_a_corrupted_sqlite_file_is_named_with_what_to_do(tmp_path: Path) -> None:
    broken = tmp_path / "results.db"
    broken.write_bytes(b"this is not a database, just some bytes " * 200)
    with pytest.raises(StoreError, match=r"results\.db is not a SQLite database.*move it away"):
        Store.open(str(broken))
    assert broken.read_bytes().startswith(b"this is not a database")  # never overwritten


def test_an_unreachable_postgresql_url_is_refused_with_the_password_masked() -> None:
    with pytest.raises(StoreError) as caught:
        Store.open("postgresql://evals:s3cret-pw@127.0.0.1:1/results")
    message = str(caught.value)
    assert "s3cret-pw" not in message
    assert "postgresql+psycopg://evals:***@127.0.0.1:1/results" in message
    assert "--no-store" in message


def test_an_unknown_database_kind_is_refused() -> None:
    with pytest.raises(StoreError, match="does not store results in 'mysqlx' databases, only in SQLite and PostgreSQL"):
        Store.open("mysqlx://u@h/db")


def test_a_bare_path_is_a_sqlite_file_below_the_root(tmp_path: Path) -> None:
    with Store.open("data/results.db", root=tmp_path) as store:
        assert store.engine.dialect.name == "sqlite"
    assert (tmp_path / "data" / "results.db").is_file()


def test_sqlite_stores_are_in_wal_mode(tmp_path: Path) -> None:
    with Store.open(str(tmp_path / "r.db")) as store, store.engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"


def test_migrate_is_a_no_op_on_a_current_store(store_url: str) -> None:
    with Store.open(store_url) as store:
        before = sorted(inspect(store.engine).get_table_names())
        migrate(store.engine)
        assert sorted(inspect(store.engine).get_table_names()) == before


@pytest.mark.parametrize(
    ("written", "hint"),
    [
        ("sqlite:/tmp/x.db", r"sqlite:/tmp/x\.db is not a store URL .*write sqlite:////tmp/x\.db or just /tmp/x\.db"),
        ("sqlite:results.db", r"write sqlite:///results\.db or just results\.db"),
        ("postgresql:evals", r"write postgresql://user@host/db"),
        ("mysql://u:pw@h/db", r"mysql://u:\*\*\*@h/db: niceeval does not store results in 'mysql' databases"),
        ("sqlite://results.db", r"three slashes before a relative path.*sqlite:///results\.db"),
        ("README.md", r"no store at README\.md.*named \*\.db.*write e\.g\. .*README\.db"),
        ("notes", r"write e\.g\. notes\.db"),
        ("", r"the store is empty"),
    ],
)
def test_a_store_not_written_in_a_documented_form_is_refused_with_the_right_one(
    tmp_path: Path, written: str, hint: str
) -> None:
    with pytest.raises(StoreError, match=hint):
        Store.open(written, root=tmp_path)
    assert list(tmp_path.iterdir()) == []  # nothing created: no folder named `sqlite:`, no README.md database


def test_a_store_outside_the_project_needs_its_folder_to_exist(tmp_path: Path) -> None:
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    project.mkdir()
    with pytest.raises(StoreError, match=r"folder .*elsewhere/dir of the store .* does not exist; create it first"):
        Store.open(str(elsewhere / "dir" / "results.db"), root=project)
    assert not elsewhere.exists()
    with Store.open(str(tmp_path / "results.db"), root=project):  # an existing folder outside is fine
        pass


def test_a_store_folder_is_refused_naming_a_file_in_it(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match=r"is a folder: name a file in it, e\.g\. .*results\.db"):
        Store.open(str(tmp_path), root=tmp_path)


def test_an_existing_file_is_opened_whatever_its_name(tmp_path: Path) -> None:
    with Store.open("first.db", root=tmp_path):
        pass
    (tmp_path / "first.db").rename(tmp_path / "kept.data")
    with Store.open("kept.data", root=tmp_path) as store:
        assert store.engine.dialect.name == "sqlite"


def test_a_relative_sqlite_url_is_below_the_project_and_an_absolute_one_from_root(tmp_path: Path) -> None:
    with Store.open("sqlite:///data/r.db", root=tmp_path):
        pass
    assert (tmp_path / "data" / "r.db").is_file()
    with Store.open(f"sqlite:///{tmp_path / 'abs.sqlite'}", root=tmp_path / "data"):
        pass
    assert (tmp_path / "abs.sqlite").is_file()


def test_a_store_from_before_clusters_is_upgraded_and_its_runs_have_none(store_url: str) -> None:
    from alembic import command
    from alembic.config import Config

    from niceeval._core.summary import PlannedEval
    from niceeval.store._open import _MIGRATIONS

    with Store.open(store_url) as store:
        with recording(store) as recorder:
            recorder.begin(SuiteRunStart(id="old", command=["niceeval", "run"]),
                           [PlannedEval(id="a", file="evals/a.py", line=1, cluster="document=x")])  # fmt: skip
        with store.engine.begin() as conn:  # back to schema 0008, as an older niceeval left it
            config = Config()
            config.set_main_option("script_location", str(_MIGRATIONS))
            config.attributes["connection"] = conn
            command.downgrade(config, "0008")
        assert "cluster" not in {c["name"] for c in inspect(store.engine).get_columns("suite_evals")}
    with Store.open(store_url) as store:
        assert [(e.eval_id, e.cluster) for e in store.run("old").evals] == [("a", None)]
    assert _schema_diff(store_url) == []
