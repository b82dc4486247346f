"""What the command imports before it needs it (issue 20: start-up time). Times are measured by
bench/startup.py, by hand; these tests pin the cuts that buy them: `niceeval --help` imports no heavy library,
a run with `--no-store` never imports SQLAlchemy, also in a project whose results store exists, and neither does a
default run once the store exists."""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

from niceeval._run.gc_pacing import paced_collection, paused_collection
from niceeval._run.stray_threads import stray_threads, watching
from niceeval.cli._main import GROUPS, build_parser

HEAVY = ("pydantic", "sqlalchemy", "rich", "anyio", "httpx", "openai", "importlib.metadata")

PROBE = """\
import json, sys
from niceeval.cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as exit:
    code = exit.code
heavy = [name for name in {heavy!r} if name in sys.modules]
print(json.dumps({{"code": code, "imported": heavy}}), file=sys.stderr)
"""


def niceeval(root: Path, *args: str, probe: tuple[str, ...] = HEAVY) -> tuple[int, list[str], str]:
    """Run the command in a fresh interpreter: its exit code, which of `probe` it imported, and its output."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(heavy=probe), *args],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=60,
    )
    probe = json.loads(done.stderr.strip().splitlines()[-1])
    return probe["code"], probe["imported"], done.stdout


def project(root: Path) -> Path:
    (root / "evals").mkdir()
    (root / "evals" / "one.py").write_text(
        "from niceeval import define_eval\n"
        "from niceeval.expect import equals\n\n"
        "@define_eval\n"
        "def one(t):\n"
        "    t.check(1, equals(1))\n"
    )
    return root


def test_help_imports_no_heavy_library(tmp_path: Path) -> None:
    code, imported, output = niceeval(tmp_path, "--help")
    assert code == 0 and "Test LLM apps and AI agents." in output
    assert imported == []


def test_run_help_imports_no_heavy_library(tmp_path: Path) -> None:
    code, imported, output = niceeval(tmp_path, "run", "--help")
    assert code == 0 and "--no-store" in output
    assert imported == []


def test_version_is_read_when_asked(tmp_path: Path) -> None:
    code, imported, output = niceeval(tmp_path, "--version")
    assert code == 0 and output.startswith("niceeval ")
    assert imported == ["importlib.metadata"]


def test_a_run_with_no_store_does_not_import_sqlalchemy(tmp_path: Path) -> None:
    code, imported, output = niceeval(project(tmp_path), "run", "--no-store")
    assert code == 0 and "1 passed" in output
    assert "sqlalchemy" not in imported and "pydantic" in imported
    assert not (tmp_path / ".niceeval" / "results.db").exists()


def test_a_run_with_no_store_beside_a_store_without_cases_does_not_import_sqlalchemy(tmp_path: Path) -> None:
    root = project(tmp_path)
    code, imported, _ = niceeval(root, "run")
    assert code == 0 and "sqlalchemy" in imported and (root / ".niceeval" / "results.db").is_file()
    code, imported, output = niceeval(root, "run", "--no-store")
    assert code == 0 and "1 passed" in output and "stored as run" not in output
    assert "sqlalchemy" not in imported


def test_a_default_run_into_a_store_already_made_does_not_import_sqlalchemy(tmp_path: Path) -> None:
    """The run writes through the database driver; SQLAlchemy (and Alembic) only make or migrate the store."""
    import sqlite3

    root = project(tmp_path)
    code, imported, _ = niceeval(root, "run")
    assert code == 0 and "sqlalchemy" in imported  # the first run made the store
    code, imported, output = niceeval(root, "run")
    assert code == 0 and "1 passed" in output and "stored as run" in output
    assert "sqlalchemy" not in imported
    with contextlib.closing(sqlite3.connect(root / ".niceeval" / "results.db")) as db:
        rows = db.execute("SELECT status, runs_done, passed FROM suite_runs").fetchall()
    assert rows == [("finished", 1, 1), ("finished", 1, 1)]


def test_a_run_into_a_postgresql_store_made_already_imports_no_sqlalchemy(postgres: object, tmp_path: Path) -> None:
    from niceeval.store import Store

    url = postgres.database()  # type: ignore[attr-defined]
    Store.open(url).close()
    code, imported, output = niceeval(project(tmp_path), "run", "--store", url)
    assert code == 0 and "1 passed" in output and "stored as run" in output
    assert "sqlalchemy" not in imported
    with Store.open(url) as store:
        assert [(r.status, r.passed) for r in store.runs()] == [("finished", 1)]


NOT_ON_A_PLAIN_RUN = (
    "rapidfuzz",
    "niceeval._eval.cases",
    "niceeval._eval.declared",  # `assert:` entries: loaded while planning an eval with cases
    "niceeval._eval.dataset_eval",
    "niceeval._eval.peers",
    "niceeval._eval.promptfoo",
    "niceeval._run.load_hints",
    "niceeval._run.keyword",  # -k's parser
    "niceeval._run.shard",  # --shard
    "niceeval.report.progress",  # the live bar: only on a terminal
    "rich.live",
)
"""What a one-eval run does not use, so does not import (bench/startup.py times what that buys)."""


def test_a_plain_run_does_not_import_what_it_does_not_use(tmp_path: Path) -> None:
    code, imported, output = niceeval(project(tmp_path), "run", "--no-store", probe=NOT_ON_A_PLAIN_RUN)
    assert code == 0 and "1 passed" in output
    assert imported == []


def test_edit_distances_load_as_an_eval_file_imports_them_before_the_suite_loop(tmp_path: Path) -> None:
    """`from niceeval.expect import similarity` loads rapidfuzz during discovery: an async eval (which runs on the
    event loop) finds it loaded already, and the matchers work."""
    (tmp_path / "evals").mkdir()
    (tmp_path / "evals" / "fuzzy.py").write_text(
        "import sys\n"
        "from niceeval import define_eval\n"
        "from niceeval.expect import equals, levenshtein, similarity\n\n"
        "@define_eval\n"
        "async def close(t):\n"
        "    t.check('rapidfuzz' in sys.modules, equals(True).label('loaded before the loop'))\n"
        "    t.check('colour', levenshtein('color', max_distance=1))\n"
        "    t.check('colour', similarity('color').at_least(0.8))\n"
    )
    code, imported, output = niceeval(tmp_path, "run", "--no-store", probe=NOT_ON_A_PLAIN_RUN)
    assert code == 0 and "1 passed" in output, output
    assert imported == ["rapidfuzz"]


def test_a_dataset_row_asking_for_similarity_loads_it_while_planning(tmp_path: Path) -> None:
    (tmp_path / "evals").mkdir()
    (tmp_path / "evals" / "rows.py").write_text(
        "import sys\n"
        "from niceeval import define_eval\n"
        "from niceeval.expect import equals\n\n"
        "ROWS = [{'id': 'near', 'assert': [{'type': 'similarity', 'value': 'color', 'threshold': 0.8}]},\n"
        "        {'id': 'far', 'assert': [{'type': 'levenshtein', 'value': 'colour', 'threshold': 9}]}]\n\n"
        "@define_eval(cases=ROWS)\n"
        "async def rows(t):\n"
        "    t.check('rapidfuzz' in sys.modules, equals(True).label('loaded before the loop'))\n"
        "    t.check_case(on='colour')\n"
    )
    code, imported, output = niceeval(tmp_path, "run", "--no-store", probe=NOT_ON_A_PLAIN_RUN)
    assert code == 0 and "2 passed" in output, output
    assert "rapidfuzz" in imported and "niceeval._eval.cases" in imported


def test_garbage_left_by_an_eval_is_still_finalized_when_the_command_exits(tmp_path: Path) -> None:
    """The command freezes what is alive out of the interpreter's teardown collections: garbage is collected
    first, so a finalizer of an object an eval dropped in a reference cycle still runs."""
    (tmp_path / "evals").mkdir()
    (tmp_path / "evals" / "cycle.py").write_text(
        "from pathlib import Path\n"
        "from niceeval import define_eval\n"
        "from niceeval.expect import equals\n\n"
        "class Marker:\n"
        "    def __init__(self):\n"
        "        self.me = self\n"
        "    def __del__(self):\n"
        "        Path('finalized.txt').write_text('yes')\n\n"
        "@define_eval\n"
        "def drops_a_cycle(t):\n"
        "    Marker()\n"
        "    t.check(1, equals(1))\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "niceeval", "run", "--no-store"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "finalized.txt").read_text() == "yes"


def test_start_up_is_not_collected_but_the_suite_loop_is_and_the_old_state_comes_back() -> None:
    assert gc.isenabled()
    with paused_collection():
        assert not gc.isenabled()  # imports, discovery, planning: what they make lives to the end
        with paced_collection():
            assert gc.isenabled() and gc.get_freeze_count() > 0  # the suite's loop is collected, paced
        assert not gc.isenabled() and gc.get_freeze_count() == 0
    assert gc.isenabled()


def test_a_paused_start_up_is_collected_again_after_an_error() -> None:
    with contextlib.suppress(RuntimeError), paused_collection():
        raise RuntimeError("a bad config")
    assert gc.isenabled()


def test_the_loops_finishing_worker_thread_is_not_a_stray_but_an_evals_thread_is() -> None:
    """niceeval's imports off the loop run on the loop's worker thread, which stops a little after `anyio.run`
    returns: the exit waits for it instead of naming it (and leaving through `os._exit`)."""
    finishing = threading.Thread(target=time.sleep, args=(0.05,), name="AnyIO worker thread")
    stuck = threading.Event()
    left = threading.Thread(target=stuck.wait, name="left-by-an-eval")
    with watching("evals/e.py::leaves_a_thread"):
        left.start()
    finishing.start()
    try:
        assert stray_threads() == ["'left-by-an-eval' (started during evals/e.py::leaves_a_thread)"]
        assert not finishing.is_alive()
    finally:
        stuck.set()
        left.join(timeout=5)


def test_a_worker_thread_an_eval_borrowed_is_the_loops_until_it_outlives_the_loop() -> None:
    """An eval's `to_thread` call starts the loop's worker thread during its run; on Python 3.12+ the worker may
    still be stopping when the command ends. It is waited for, not named (the false warning of issue 41); one
    still busy after the wait (an abandoned blocking call) is named with the eval it appeared in."""
    finishing = threading.Thread(target=time.sleep, args=(0.2,), name="AnyIO worker thread")
    stuck = threading.Event()
    busy = threading.Thread(target=stuck.wait, name="AnyIO worker thread")
    with watching("evals/e.py::borrows_a_worker"):
        finishing.start()
    try:
        assert stray_threads() == [] and not finishing.is_alive()
        with watching("evals/e.py::abandons_a_blocking_call"):
            busy.start()
        assert stray_threads() == ["'AnyIO worker thread' (started during evals/e.py::abandons_a_blocking_call)"]
    finally:
        stuck.set()
        busy.join(timeout=5)


def _commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    (commands,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(commands.choices)


def test_each_command_group_adds_the_commands_the_table_names() -> None:
    """A command parses with its group's parser alone: the table must name every command of every group."""
    everything = _commands(build_parser())
    assert sorted(everything) == sorted(name for names in GROUPS.values() for name in names)
    for names in GROUPS.values():
        for name in names:
            alone = _commands(build_parser([name, "--help"]))
            assert sorted(alone) == sorted(names)
            assert alone[name].format_help() == everything[name].format_help()


def test_a_command_parses_the_same_with_its_group_alone() -> None:
    argv = ["run", "evals/", "--runs", "3", "-k", "refund", "--no-store", "--timeout", "30"]
    assert vars(build_parser(argv).parse_args(argv)) == vars(build_parser().parse_args(argv))
    argv = ["rescore", "latest", "--strict"]
    assert vars(build_parser(argv).parse_args(argv)) == vars(build_parser().parse_args(argv))


def test_the_top_level_help_and_unknown_commands_see_every_command(tmp_path: Path) -> None:
    code, _, output = niceeval(tmp_path, "--help")
    assert code == 0 and all(name in output for names in GROUPS.values() for name in names)
    done = subprocess.run(
        [sys.executable, "-m", "niceeval", "rnu"], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2 and "invalid choice: 'rnu'" in done.stderr and "calibrate" in done.stderr


def test_a_clean_run_record_is_checked_without_compiling_the_whole_text_secret_patterns() -> None:
    from niceeval._core.redact import Redactor, _pattern
    from niceeval._core.results import RunResult

    _pattern.cache_clear()
    clean = RunResult(eval_id="e.py::x", file="e.py", line=1, outcome="passed", duration_s=0.1)
    assert Redactor({}).run(clean) is clean  # `input_tokens` and friends hold markers: checked, found clean
    assert _pattern.cache_info().currsize == 0
    leaky = clean.model_copy(update={"warnings": ["Authorization: Bearer abcd1234EFGH5678"]})
    assert Redactor({}).run(leaky).warnings == ["Authorization: Bearer [redacted]"]
    assert _pattern.cache_info().currsize > 0
