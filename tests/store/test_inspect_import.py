"""`niceeval store import LOG`: an Inspect log stored as a suite run, its scores mapped by the documented rules."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path
from typing import Any

import pytest
from inspect_ai.log import EvalConfig, EvalDataset, EvalError, EvalLog, EvalSample, EvalSpec, write_eval_log
from inspect_ai.model import ModelOutput
from inspect_ai.scorer import Score
from starlette.testclient import TestClient

from niceeval import ConfigError
from niceeval.cli import main
from niceeval.store import Store, read_inspect_log
from niceeval.testing import LLMRequest, LLMServer, Reply
from niceeval.web import Access, ViewerSettings, create_app


def sample(sample_id: str, scores: dict[str, Any], *, epoch: int = 1, **more: Any) -> EvalSample:
    return EvalSample(
        id=sample_id, epoch=epoch, input=f"question {sample_id}", target="Paris",
        output=ModelOutput.from_content("openai/m", f"answer {sample_id}"),
        scores={name: Score(value=value, answer=f"answer {sample_id}", explanation="why")
                for name, value in scores.items()},
        **more,
    )  # fmt: skip


def written(path: Path, samples: list[EvalSample], *, status: str = "success", error: str | None = None) -> Path:
    spec = EvalSpec(
        created="2026-11-28T00:00:00+00:00", task="qa", dataset=EvalDataset(), model="openai/m", config=EvalConfig()
    )
    failure = EvalError(message=error, traceback="", traceback_ansi="") if error else None
    write_eval_log(EvalLog(eval=spec, samples=samples, status=status, error=failure), str(path))
    return path


MAPPED = [
    sample("letters", {"c": "C", "i": "I"}),
    sample("partial", {"p": "P", "n": "N"}),
    sample("flags", {"yes": True, "no": False}),
    sample("graded", {"g": 0.7}),
    sample("full", {"g": 1.0}, epoch=2),
    sample("many", {"m": {"acc": 1, "f1": 0.5}}),
    sample("odd", {"t": "yes", "l": [1, 2], "big": 7}),
    sample("unscored", {}),
    sample("broke", {}, error={"message": "model refused", "traceback": "", "traceback_ansi": ""}),
]


def summary(path: Path) -> list[tuple[Any, ...]]:
    log = read_inspect_log(path)
    return [
        (r.eval_id, r.run_index, r.outcome, [(a.name, a.severity, a.score, a.state) for a in r.assertions])
        for r in log.runs
    ]


def test_scores_map_by_the_documented_rules(tmp_path: Path) -> None:
    log = read_inspect_log(written(tmp_path / "run.json", MAPPED))
    assert [(r.eval_id, r.run_index, r.outcome) for r in log.runs] == [
        ("qa[broke]", 0, "failed"),
        ("qa[flags]", 0, "failed"),
        ("qa[full]", 1, "passed"),
        ("qa[graded]", 0, "scored"),
        ("qa[letters]", 0, "failed"),
        ("qa[many]", 0, "scored"),
        ("qa[odd]", 0, "passed"),
        ("qa[partial]", 0, "failed"),
        ("qa[unscored]", 0, "skipped"),
    ]  # no dataset order in this log: by sample id
    scores = {(r.case_id, a.name): (a.severity, a.score, a.state) for r in log.runs for a in r.assertions}
    assert scores == {
        ("letters", "c"): ("gate", 1.0, "passed"),
        ("letters", "i"): ("gate", 0.0, "failed"),
        ("partial", "p"): ("gate", 0.5, "failed"),
        ("partial", "n"): ("gate", 0.0, "failed"),
        ("flags", "yes"): ("gate", 1.0, "passed"),
        ("flags", "no"): ("gate", 0.0, "failed"),
        ("graded", "g"): ("soft", 0.7, "failed"),
        ("full", "g"): ("soft", 1.0, "passed"),
        ("many", "m/acc"): ("soft", 1.0, "passed"),
        ("many", "m/f1"): ("soft", 0.5, "failed"),
        ("odd", "t"): ("soft", None, "inconclusive"),
        ("odd", "l"): ("soft", None, "inconclusive"),
        ("odd", "big"): ("soft", None, "inconclusive"),
    }
    runs = {r.case_id: r for r in log.runs}
    odd = runs["odd"].assertions[0]
    assert odd.reason == 'Inspect\'s value "yes" has no niceeval equivalent; why'
    first = runs["letters"]
    assert (first.assertions[0].expected, first.assertions[0].actual) == ("Paris", "answer letters")
    assert [(e.role, e.text) for e in first.events] == [("user", "question letters"), ("assistant", "answer letters")]
    assert runs["unscored"].skip_reason == "the Inspect log holds no score for this sample"
    broke = runs["broke"].error
    assert broke is not None and broke.message == "model refused"
    assert [(p.id, p.runs) for p in log.plan][2] == ("qa[full]", 2)
    assert "Inspect: score values other than C/I/P/N, booleans and numbers from 0 to 1 (imported inconclusive)" in (
        log.notes
    )


def test_eval_id_names_the_eval_the_samples_are_cases_of(tmp_path: Path) -> None:
    log = read_inspect_log(written(tmp_path / "run.eval", MAPPED[:1]), eval_id="samples.jsonl::dataset")
    assert [r.eval_id for r in log.runs] == ["samples.jsonl::dataset[letters]"]


def _as_plain_zip(json_log: Path, target: Path) -> Path:
    """The documented `.eval` layout, deflate-compressed: header.json and one samples/ID_epoch_N.json each."""
    data = json.loads(json_log.read_text())
    samples = data.pop("samples")
    with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("header.json", json.dumps(data))
        for one in samples:
            archive.writestr(f"samples/{one['id']}_epoch_{one['epoch']}.json", json.dumps(one))
    return target


WITHOUT_INSPECT = """\
import json, sys
sys.modules["inspect_ai"] = None
from niceeval.store import read_inspect_log
try:
    log = read_inspect_log(sys.argv[1])
except Exception as exc:
    print(json.dumps(str(exc)))
else:
    print(json.dumps([[r.eval_id, r.run_index, r.outcome, [[a.name, a.severity, a.score, a.state]
                                                          for a in r.assertions]] for r in log.runs]))
"""


def _read_without_inspect(path: Path) -> Any:
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_INSPECT, str(path)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_without_inspect_the_documented_format_reads_the_same(tmp_path: Path) -> None:
    json_log = written(tmp_path / "run.json", MAPPED)
    expected = json.loads(json.dumps(summary(json_log)))
    assert _read_without_inspect(json_log) == expected
    assert _read_without_inspect(_as_plain_zip(json_log, tmp_path / "plain.eval")) == expected


def test_a_zstd_log_without_inspect_names_the_fix(tmp_path: Path) -> None:
    log = written(tmp_path / "run.eval", MAPPED[:1])  # Inspect compresses .eval members with zstd
    message = _read_without_inspect(log)
    assert message == (
        f"{log}: this .eval log is compressed with zstd, which this Python cannot open: pip install inspect-ai "
        "(niceeval then reads it with Inspect's reader), or write it as JSON (`inspect log convert --to json`)."
    )


def test_an_unknown_log_version_names_the_file_and_the_fix(tmp_path: Path) -> None:
    path = tmp_path / "future.json"
    path.write_text(json.dumps({"version": 9, "status": "success", "eval": {"task": "qa"}, "samples": []}))
    with pytest.raises(ConfigError) as raised:
        read_inspect_log(path)
    assert str(raised.value) == (
        f"{path}: an Inspect log of format version 9; niceeval reads versions 1, 2. Upgrade niceeval "
        "(pip install -U niceeval), or write the log with an Inspect release that writes one of these."
    )


def test_a_file_that_is_not_a_log_is_refused_naming_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "notes.json"
    path.write_text('{"hello": 1}')
    assert main(["store", "import", str(path), "--store", str(tmp_path / "r.db")]) == 2
    assert f"{path}: not an Inspect log (no `version`)" in capsys.readouterr().err
    assert not (tmp_path / "r.db").exists()  # nothing was stored


@pytest.mark.parametrize(("status", "stored"), [("error", "finished"), ("cancelled", "interrupted")])
def test_an_import_is_a_suite_run_of_kind_import_on_either_database(
    store_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], status: str, stored: str
) -> None:
    log = written(tmp_path / "run.json", MAPPED[:2], status=status, error="quota" if status == "error" else None)
    assert main(["store", "import", str(log), "--store", store_url]) == 0
    run_id = capsys.readouterr().out.split(" as run ")[1].split()[0]
    with Store.open(store_url) as store:
        info = store.run(run_id).run
        assert (info.kind, info.status, info.runs_done, info.failed, info.command[:3]) == (
            "import", stored, 2, 2, ["niceeval", "store", "import"]
        )  # fmt: skip
        assert info.errors == ([{"location": str(log), "message": "Inspect: quota"}] if status == "error" else [])
        assert store.outcomes(run_id) == {("qa[letters]", 0): "failed", ("qa[partial]", 0): "failed"}


SAMPLES = [
    {"id": "paris", "input": "Capital of France?", "target": "Paris"},
    {"id": "rome", "input": "Capital of Italy?", "target": "Rome"},
]

INSPECT_RUN = """\
import sys
from inspect_ai import Task, eval
from inspect_ai.dataset import json_dataset
from inspect_ai.scorer import includes, match
from inspect_ai.solver import generate

task = Task(dataset=json_dataset("samples.jsonl"), solver=generate(), scorer=[includes(), match(location="any")],
            name="capitals")
log = eval(task, model="openai/gpt-4o-mini", model_base_url=sys.argv[1], log_dir="logs", display="none", epochs=2)[0]
print(log.location)
sys.exit(0 if log.status == "success" else 1)
"""

CONFIG = """\
from niceeval import define_config
from niceeval.agents import openai_agent

config = define_config(agent=openai_agent("openai/gpt-4o-mini"))
"""


def answer(request: LLMRequest) -> Reply:
    return Reply(text="It is Paris." if "France" in request.last_user_text else "It is Milan.")


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_a_log_inspect_wrote_imports_and_diffs_against_a_niceeval_run_of_the_same_samples(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import niceeval

    (tmp_path / "samples.jsonl").write_text("".join(json.dumps(row) + "\n" for row in SAMPLES))
    (tmp_path / "niceeval.config.py").write_text(CONFIG)
    monkeypatch.chdir(tmp_path)
    with LLMServer(answer) as server:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "INSPECT"))}
        env.update(OPENAI_API_KEY="test-key", INSPECT_LOG_LEVEL="warning")
        inspect = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(INSPECT_RUN), server.base_url],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=200,
        )  # fmt: skip
        assert inspect.returncode == 0, inspect.stdout + inspect.stderr
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        ours = niceeval.run("samples.jsonl", runs=2)
        assert len(server.requests) == 8  # 2 samples x 2 epochs, by each tool
    log = Path(inspect.stdout.strip().splitlines()[-1].removeprefix("file://"))
    capsys.readouterr()

    assert main(["store", "import", str(log), "--eval-id", "samples.jsonl::dataset"]) == 0
    printed = capsys.readouterr()
    imported = printed.out.split(" as run ")[1].split()[0]
    assert "imported 4 sample runs of Inspect task capitals (openai/gpt-4o-mini, success)" in printed.out
    assert "niceeval: not mapped: Inspect: epoch reductions" in printed.err

    with Store.open(str(tmp_path / ".niceeval" / "results.db")) as store:
        assert store.run(imported).run.kind == "import"
        assert (
            store.outcomes(imported)
            == store.outcomes(ours.run_id or "")
            == {
                ("samples.jsonl::dataset[paris]", 0): "passed",
                ("samples.jsonl::dataset[paris]", 1): "passed",
                ("samples.jsonl::dataset[rome]", 0): "failed",
                ("samples.jsonl::dataset[rome]", 1): "failed",
            }
        )
        diff = store.diff(imported, ours.run_id or "")
        assert (diff.changed, diff.new, diff.gone, diff.reasons) == ([], [], [], [])
        frame = store.assertions_df(imported)
        assert frame[["eval_id", "name", "state", "actual"]].values.tolist()[:2] == [
            ["samples.jsonl::dataset[paris]", "includes", "passed", "it is paris."],
            ["samples.jsonl::dataset[paris]", "match", "passed", "It is Paris."],
        ]
        viewer = create_app(ViewerSettings(store=store, access=Access(token=None, loopback=True)))
        browser = TestClient(viewer, base_url="http://127.0.0.1:7575")
        assert "Nothing changed between these runs." in browser.get(f"/compare?base={imported}&head={ours.run_id}").text
        compared = browser.get(f"/compare?base={imported}&head={ours.run_id}&show=all")
        assert compared.status_code == 200
        assert "samples.jsonl::dataset[rome]" in compared.text and "samples.jsonl::dataset[paris]" in compared.text
        assert ">import</span>" in browser.get("/").text
    assert main(["diff", imported, ours.run_id or ""]) == 0
    assert "suite pass rate over 2 shared evals: 50% -> 50%" in capsys.readouterr().out
