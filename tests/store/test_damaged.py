"""Damaged stores (issue 17): each kind of damage is named, with the file and what to do; nothing silently lost,
nothing silently new, no traceback."""

from __future__ import annotations

import io
import os
import shutil
import time
from pathlib import Path

import pytest

from niceeval.cli._main import main
from niceeval.judge._cache import JudgeCache, JudgeCacheDamaged
from niceeval.store import Store, StoreError, SuiteRunStart
from niceeval.store._recorder import Recorder

from .test_sink import sink_of, summary_of
from .test_store import planned, result

MOVE_AWAY = "move it away"


def _store_with_runs(path: Path) -> None:
    with Store.open(f"sqlite:///{path}") as store:
        for n in range(3):
            sink = sink_of(store, SuiteRunStart(id=f"s{n}"))
            sink.start(planned(*(f"e{i}" for i in range(40))), [])
            for i in range(40):
                sink.run_finished(result(f"e{i}").model_copy(update={"skip_reason": "x" * 3000}))
            sink.finish(summary_of([f"e{i}" for i in range(40)]))
            sink.settle()
    with Store.open(f"sqlite:///{path}") as store, store.engine.connect() as conn:
        conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")


@pytest.fixture(scope="module")
def sound(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("sound") / "results.db"
    _store_with_runs(path)
    return path


def _copy(sound: Path, tmp_path: Path) -> Path:
    path = tmp_path / "results.db"
    shutil.copy(sound, path)
    return path


def test_an_empty_file_is_refused_not_made_a_new_store(tmp_path: Path) -> None:
    path = tmp_path / "results.db"
    path.touch()
    os.utime(path, (time.time() - 60, time.time() - 60))  # not another process's store in the making
    with pytest.raises(StoreError, match=rf"{path} is an empty file \(0 bytes\), not a results store: {MOVE_AWAY}"):
        Store.open(str(path))
    assert path.stat().st_size == 0


def test_a_truncated_store_is_named_as_cut_short(sound: Path, tmp_path: Path) -> None:
    path = _copy(sound, tmp_path)
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with pytest.raises(StoreError, match=rf"{path} is cut short \(\d+ of \d+ bytes.*{MOVE_AWAY}"):
        Store.open(str(path))


def test_a_store_another_process_is_writing_is_not_judged_by_its_header(sound: Path, tmp_path: Path) -> None:
    """A checkpoint writes page 1 (the new page count) before the pages after it: while a log or journal sits
    beside the file, a short file is a writer at work (shards and xdist workers share one store), not damage."""
    from niceeval.store._damage import check_sqlite_file

    path = _copy(sound, tmp_path)
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    assert check_sqlite_file(path) is not None and "cut short" in str(check_sqlite_file(path))
    for beside in ("-wal", "-journal"):
        log = path.with_name(path.name + beside)
        log.touch()
        assert check_sqlite_file(path) is None
        log.unlink()


class _ShardEndingMidLook(type(Path())):  # type: ignore[misc]  # PosixPath or WindowsPath: Path's concrete class
    """The store file as one shard sees it while another shard, which made the store, ends: that shard's last
    connection checkpoints the log into the file and deletes the log just before this one looks for a log."""

    other: Store | None = None

    def exists(self, *args: bool, **kwargs: bool) -> bool:
        if _ShardEndingMidLook.other is not None and self.name.endswith(("-wal", "-journal")):
            _ShardEndingMidLook.other.close()  # its checkpoint writes page 1 (the page count), then the rest
            _ShardEndingMidLook.other = None
        return super().exists(*args, **kwargs)


def test_a_store_whose_maker_ends_while_it_is_looked_at_is_not_judged_cut_short(tmp_path: Path) -> None:
    """Shards started at once (CI flake, a shard 'not started'): one shard made the store (its schema in the log,
    the file one page long) and ended between another shard's `stat` of the file and its look for a log; the header
    then counts pages the stale size did not have. A writer at work changes the file; damage stays."""
    from niceeval.store._damage import check_sqlite_file

    path = tmp_path / "results.db"
    _ShardEndingMidLook.other = Store.open(str(path))
    page = int.from_bytes(path.read_bytes()[16:18], "big")
    assert path.stat().st_size == page and path.with_name("results.db-wal").exists()  # page 1, the rest in the log
    assert check_sqlite_file(_ShardEndingMidLook(path)) is None
    assert _ShardEndingMidLook.other is None  # the other shard did end mid-look
    assert path.stat().st_size > page and not path.with_name("results.db-wal").exists()
    with Store.open(str(path)) as store:
        assert store.runs() == []


def test_garbled_pages_met_while_reading_are_named_not_a_traceback(sound: Path, tmp_path: Path) -> None:
    path = _copy(sound, tmp_path)
    data = bytearray(path.read_bytes())
    page = int.from_bytes(data[16:18], "big")
    for n in range(10, len(data) // page - 2):
        data[n * page + 8 : n * page + 400] = b"\xde\xad" * 196
    path.write_bytes(bytes(data))
    with pytest.raises(StoreError, match=rf"{path} is damaged \(.*\): {MOVE_AWAY}.*niceeval store check"):
        with Store.open(str(path)) as store:
            for info in store.runs():
                list(store.results(info.id))


def test_store_check_says_sound_or_damaged(sound: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _copy(sound, tmp_path)
    assert main(["store", "check", "--store", str(path)]) == 0
    assert "3 suite runs readable" in capsys.readouterr().out
    path.write_bytes(path.read_bytes()[:5000])
    assert main(["store", "check", "--store", str(path)]) == 1
    assert f"damaged: the results store {path} is cut short" in capsys.readouterr().out


def test_a_garbled_judge_cache_says_so_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "judge-cache.sqlite"
    path.write_bytes(b"garbage, not a database " * 100)
    cache = JudgeCache(path)
    for _ in range(2):
        with pytest.raises(JudgeCacheDamaged, match=rf"the judge cache {path} is damaged .*delete it"):
            cache.get_sync("key")
    assert capsys.readouterr().err.count("niceeval: warning: the judge cache") == 1


def test_garbled_pages_met_by_the_runs_writer_are_named(sound: Path, tmp_path: Path) -> None:
    path = _copy(sound, tmp_path)
    recorder = Recorder.open(str(path), tmp_path)
    data = bytearray(path.read_bytes())  # damaged under the open writer's feet
    page = int.from_bytes(data[16:18], "big")
    for n in range(10, len(data) // page - 2):
        data[n * page + 8 : n * page + 400] = b"\xde\xad" * 196
    path.write_bytes(bytes(data))
    warnings = io.StringIO()
    sink = recorder.sink(SuiteRunStart(id="new"), warnings=warnings)
    sink.start(planned("e0"), [])
    sink.run_finished(result("e0"))
    sink.finish(summary_of(["e0"]))
    sink.settle()
    sink.close()
    assert sink.error is not None and f"{path} is damaged (" in sink.error and MOVE_AWAY in sink.error
    assert "were not stored in the results store" in warnings.getvalue()
    with pytest.raises(StoreError, match=rf"{path} is damaged \(.*\): {MOVE_AWAY}"):
        Recorder.open(str(path), tmp_path)  # the next run: refused by name before any eval runs
