"""`niceeval watch` on the command line: it watches, stores, and says what it did; without online evals, exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from niceeval.cli import main
from niceeval.store import Store


def test_watch_for_a_while_stores_a_finished_online_suite_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "evals").mkdir()
    (tmp_path / "evals" / "online.py").write_text(
        "from niceeval import define_eval\n\n@define_eval(online=True)\ndef seen(t): pass\n", encoding="utf-8"
    )
    assert main(["watch", "--port", "0", "--duration", "0.5"]) == 0
    said = capsys.readouterr().err
    assert "niceeval watch: watching: OTLP/HTTP traces at http://127.0.0.1:" in said
    assert "1 online eval(s)" in said and "stopped: 0 trace(s) closed" in said
    store = Store.open(str(tmp_path / ".niceeval" / "results.db"))
    try:
        (run,) = store.runs()
    finally:
        store.close()
    assert (run.kind, run.status) == ("online", "finished")


def test_watch_without_online_evals_says_how_to_declare_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "evals").mkdir()
    (tmp_path / "evals" / "offline.py").write_text(
        "from niceeval import define_eval\n\n@define_eval\ndef plain(t): pass\n", encoding="utf-8"
    )
    assert main(["watch", "--port", "0", "--duration", "0.1"]) == 2
    assert "no online evals found: declare one with @define_eval(online=True)" in capsys.readouterr().err


def test_alarms_read_their_reference_run_from_the_store_and_say_what_they_compare_with(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "evals").mkdir()
    (tmp_path / "evals" / "online.py").write_text(
        "from niceeval import define_eval\n\n@define_eval(online=True)\ndef helpful(t): pass\n", encoding="utf-8"
    )
    (tmp_path / "evals" / "suite.py").write_text(
        "from niceeval import define_eval\n\n@define_eval(runs=4)\ndef helpful(t): pass\n", encoding="utf-8"
    )
    assert main(["run"]) == 0
    capsys.readouterr()
    alarms = ["--alarm", "pass:helpful>=ref", "--alarm", "pass>=window:500", "--alarm", "pass>=0.9"]
    assert main(["watch", "--port", "0", "--duration", "0.3", "--reference", "latest", *alarms]) == 0
    said = capsys.readouterr().err
    store = Store.open(str(tmp_path / ".niceeval" / "results.db"))
    try:
        reference = store.runs()[-1].id
    finally:
        store.close()
    assert f"alarm pass:helpful>=ref: against suite run {reference} (mean 1.000 over 4 score(s)), alpha 0.05" in said
    assert "alarm pass>=window:500: against its first 500 score(s) of this watch, alpha 0.05" in said
    assert "alarm pass>=0.9: against the target 0.9, alpha 0.05" in said


@pytest.mark.parametrize(
    ("flags", "problem"),
    [
        (["--alarm", "pass>=ref"], "'ref' compares with a stored suite run: pass --reference RUN_ID"),
        (["--alarm", "rubric:helpful>=ref", "--reference", "latest"], "holds no score of 'rubric' in eval 'helpful'"),
        (["--alarm", "pass>=ref", "--reference", "nope"], "no suite run 'nope' in the results store"),
    ],
)
def test_a_reference_that_cannot_be_read_stops_the_watch_before_it_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], flags: list[str], problem: str
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "evals").mkdir()
    (tmp_path / "evals" / "online.py").write_text(
        "from niceeval import define_eval\n\n@define_eval(online=True)\ndef helpful(t): pass\n", encoding="utf-8"
    )
    (tmp_path / "evals" / "suite.py").write_text(
        "from niceeval import define_eval\n\n@define_eval\ndef helpful(t): pass\n", encoding="utf-8"
    )
    assert main(["run"]) == 0
    capsys.readouterr()
    assert main(["watch", "--port", "0", "--duration", "0.1", *flags]) == 2
    assert problem in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_sigterm_stops_the_watcher_cleanly_and_finishes_its_suite_run(tmp_path: Path) -> None:
    import signal
    import subprocess
    import sys
    import time

    import httpx

    from tests.online.test_docs_online import free_port

    (tmp_path / "evals").mkdir()
    (tmp_path / "evals" / "online.py").write_text(
        "from niceeval import define_eval\n\n@define_eval(online=True)\ndef seen(t): pass\n", encoding="utf-8"
    )
    port = free_port()
    watch = subprocess.Popen(
        [sys.executable, "-m", "niceeval.cli", "watch", "--port", str(port)], cwd=tmp_path, stderr=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(f"http://127.0.0.1:{port}/status", timeout=1)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline and watch.poll() is None
                time.sleep(0.1)
        watch.send_signal(signal.SIGTERM)
        _, err = watch.communicate(timeout=30)
    finally:
        watch.kill()
    assert watch.returncode == 0, err
    assert b"niceeval watch: stopped:" in err
    store = Store.open(str(tmp_path / ".niceeval" / "results.db"))
    try:
        (run,) = store.runs()
    finally:
        store.close()
    assert (run.kind, run.status) == ("online", "finished")
