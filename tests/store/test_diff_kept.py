"""`Store.diff` of two closed suite runs is kept in the store and read back while neither run changes (SQLite and
PostgreSQL): the same diff as computed before the diff was kept or sped up (a recorded seeded pair), the second
request read back, a reopened run, other options, a running run, a read-only store and `gc`."""

from __future__ import annotations

import json
import math
import random
import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, func, select, update

from niceeval.store import DiffOptions, Store, SuiteRunStart
from niceeval.store._recorder import Recorder, SuiteEnd
from niceeval.store._schema import kept_diffs

from ._seeded_pair import record_pair, seeded_run

RECORDED = Path(__file__).parent / "data" / "diff_seeded_pair.json"
"""`describe()` of the seeded pair's diffs as niceeval computed them before diffs were kept and sped up."""
GATED = DiffOptions(threshold=0.2, strict=True, max_drop=0.05, max_cost_increase=0.1, max_latency_increase=0.1)


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    with Store.open(store_url) as opened:
        yield opened


def kept_rows(store: Store) -> int:
    with store.engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(kept_diffs)).scalar_one())


def same(found: Any, recorded: Any, where: str = "diff") -> None:
    """`found` equals `recorded` (floats to 1e-9 relative: numpy and Python sum in other orders)."""
    if isinstance(recorded, float) and isinstance(found, float):
        assert math.isclose(found, recorded, rel_tol=1e-9, abs_tol=1e-12), f"{where}: {found} != {recorded}"
    elif isinstance(recorded, dict):
        assert isinstance(found, dict) and found.keys() == recorded.keys(), f"{where}: keys differ"
        for key, value in recorded.items():
            same(found[key], value, f"{where}.{key}")
    elif isinstance(recorded, list):
        assert isinstance(found, list) and len(found) == len(recorded), f"{where}: lengths differ"
        for n, (one, other) in enumerate(zip(found, recorded, strict=True)):
            same(one, other, f"{where}[{n}]")
    elif isinstance(recorded, str) and isinstance(found, str) and found != recorded:
        same_words(found, recorded, where)
    else:
        assert found == recorded, f"{where}: {found!r} != {recorded!r}"


NUMBER = re.compile(r"[-+]?\d+(?:\.(\d+))?")


def same_words(found: str, recorded: str, where: str) -> None:
    """Printed text equal but for a number rounded the other way at a tie (+0.025 printed as +0.02 or +0.03: a
    sum in SQL is in the order of the database's plan): each number within one unit of its last printed digit."""
    assert NUMBER.sub("#", found) == NUMBER.sub("#", recorded), f"{where}: {found!r} != {recorded!r}"
    for one, other in zip(NUMBER.finditer(found), NUMBER.finditer(recorded), strict=True):
        unit = 10.0 ** -len(other.group(1) or "")
        assert abs(float(one.group()) - float(other.group())) <= unit * 1.0001, f"{where}: {found!r} != {recorded!r}"


def test_the_diff_is_the_one_computed_before_and_so_is_the_kept_one(store: Store) -> None:
    record_pair(store)
    recorded = json.loads(RECORDED.read_text())
    for name, options in (("default", DiffOptions()), ("gated", GATED)):
        computed = store.diff("base", "head", options).describe()
        same(json.loads(json.dumps(computed)), recorded[name], name)
        assert store.diff("base", "head", options).describe() == computed
    assert kept_rows(store) == 2


def test_the_second_request_reads_the_kept_diff_back(store: Store) -> None:
    record_pair(store)
    first = store.diff("base", "head")
    assert kept_rows(store) == 1
    with store.engine.begin() as conn:  # marked, so the next answer shows where it came from
        marked = first.model_copy(update={"verdict_line": "read back"}).model_dump_json()
        conn.execute(update(kept_diffs).values(diff=marked))
    second = store.diff("base", "head")
    assert second.verdict_line == "read back"
    assert second.model_copy(update={"verdict_line": first.verdict_line}) == first


def test_a_garbled_kept_diff_is_computed_again_and_kept_anew(store: Store) -> None:
    record_pair(store)
    first = store.diff("base", "head")
    with store.engine.begin() as conn:
        conn.execute(update(kept_diffs).values(diff='{"base": "base", "head": '))
    assert store.diff("base", "head") == first
    with store.engine.connect() as conn:
        assert conn.execute(select(kept_diffs.c.diff)).scalar_one() == first.model_dump_json()


def test_a_run_reopened_and_closed_again_is_compared_afresh(store: Store) -> None:
    record_pair(store)
    before = store.diff("base", "head")
    recorder = Recorder.of(store)
    try:  # a resume: head is reopened, a failing run of every shared eval added, and head closed again
        shared = [f"evals/a.py::case_{n:03d}" for n in range(20, 280)]
        planned = store.planned("head")
        recorder.extend("head", [replace(p, runs=p.runs + 1) for p in planned])
        assert store.diff("base", "head") is not None and kept_rows(store) == 1  # running: computed, not kept
        extra = [seeded_run(random.Random(n), e, 3, good=0.0) for n, e in enumerate(shared)]
        recorder.add("head", [r.model_copy(update={"outcome": "failed"}) for r in extra])
        recorder.finish("head", SuiteEnd(status="finished", exit_code=1, duration_s=2.0))
    finally:
        recorder.close()
    after = store.diff("base", "head")
    assert after.suite is not None and before.suite is not None
    assert after.suite.head_rate is not None and before.suite.head_rate is not None
    assert after.suite.head_rate < before.suite.head_rate
    assert after != before and kept_rows(store) == 1
    assert store.diff("base", "head") == after


def test_each_set_of_options_is_kept_apart(store: Store) -> None:
    record_pair(store)
    loose, tight = store.diff("base", "head", DiffOptions(threshold=0.5)), store.diff("base", "head", GATED)
    assert kept_rows(store) == 2
    assert store.diff("base", "head", DiffOptions(threshold=0.5)) == loose
    assert store.diff("base", "head", GATED) == tight
    assert len(loose.scores) < len(tight.scores) and loose.strict is False and tight.strict is True


def test_a_run_still_running_is_never_kept(store: Store) -> None:
    record_pair(store)
    recorder = Recorder.of(store)
    try:
        recorder.begin(SuiteRunStart(id="live", command=["niceeval", "run"]), store.planned("head"))
        recorder.add("live", [seeded_run(random.Random(n), f"evals/a.py::case_{n:03d}", 0, good=0.9)
                              for n in range(20, 60)])  # fmt: skip
        first = store.diff("base", "live")
        assert kept_rows(store) == 0
        assert store.diff("base", "live") == first
    finally:
        recorder.close()


def test_a_store_that_refuses_the_write_still_answers(tmp_path: Path) -> None:
    path = tmp_path / "results.db"
    with Store.open(f"sqlite:///{path}") as writable:
        record_pair(writable)
        expected = writable.diff("base", "head")
        with writable.engine.begin() as conn:
            conn.execute(kept_diffs.delete())
    with Store(create_engine(f"sqlite:///file:{path}?mode=ro&uri=true")) as read_only:  # the file opened read-only
        assert read_only.diff("base", "head") == expected
    with Store.open(f"sqlite:///{path}") as reopened:
        assert kept_rows(reopened) == 0


def test_gc_forgets_every_kept_diff(store: Store) -> None:
    """Even one of two runs it keeps: a run gc deletes may hold the records a kept run carried."""
    recorder = Recorder.of(store)
    try:
        recorder.begin(SuiteRunStart(id="oldest", command=["niceeval", "run"]), [])
        recorder.finish("oldest", SuiteEnd(status="finished", exit_code=0, duration_s=1.0))
        record_pair(store)
        store.diff("base", "head")
        assert kept_rows(store) == 1
        assert recorder.gc(keep=2) == (1, 0)
    finally:
        recorder.close()
    assert kept_rows(store) == 0


def test_deleting_a_run_deletes_its_kept_diffs(store: Store) -> None:
    record_pair(store)
    store.diff("base", "head")
    recorder = Recorder.of(store)
    try:
        assert recorder.gc(keep=1) == (1, sum(1 + n % 3 for n in range(280)))
    finally:
        recorder.close()
    assert kept_rows(store) == 0


def test_a_store_from_before_kept_diffs_is_upgraded_and_keeps_them(store_url: str) -> None:
    """A store an older niceeval left at 0017_pgindex (a revision named by its file's whole stem) is upgraded."""
    from alembic import command
    from alembic.config import Config
    from sqlalchemy import inspect

    from niceeval.store._open import _MIGRATIONS

    with Store.open(store_url) as store:
        record_pair(store)
        with store.engine.begin() as conn:
            config = Config()
            config.set_main_option("script_location", str(_MIGRATIONS))
            config.attributes["connection"] = conn
            command.downgrade(config, "0017_pgindex")
        assert "kept_diffs" not in inspect(store.engine).get_table_names()
    with Store.open(store_url) as store:
        assert store.diff("base", "head") == store.diff("base", "head") and kept_rows(store) == 1
