"""`niceeval simulate check`: a discriminator judge (scripted on the offline server) over real and simulated users."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from niceeval.cli import main
from niceeval.testing import LLMRequest, LLMServer

CONFIG = "from niceeval import define_config\n\nconfig = define_config(judge={'model': 'openai/discriminator'})\n"


def conversation(name: str, user: str) -> str:
    messages = [{"role": "user", "content": user}, {"role": "assistant", "content": "Sure, done."}]
    return json.dumps({"id": name, "messages": messages})


def sharp_eye(request: LLMRequest) -> dict[str, object]:
    """A discriminator that spots simulated users by their over-polite opening."""
    simulated = "I would be most grateful" in request.messages[-1].content
    return {"simulated": simulated, "features": ["too polite"] if simulated else ["typos"]}


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "niceeval.config.py").write_text(CONFIG, encoding="utf-8")
    real = [conversation(f"r{i}", f"refund pls order {i}") for i in range(6)]
    simulated = [conversation(f"s{i}", f"Hello! I would be most grateful for a refund of order {i}.") for i in range(6)]
    (tmp_path / "real.jsonl").write_text("\n".join(real) + "\n", encoding="utf-8")
    (tmp_path / "sim.jsonl").write_text("\n".join(simulated) + "\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_a_discriminator_that_tells_them_apart_scores_its_accuracy_with_an_interval(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with LLMServer(sharp_eye) as server:
        monkeypatch.setenv("OPENAI_API_KEY", "test")
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        code = main(["simulate", "check", "--real", "real.jsonl", "--simulated", "sim.jsonl", "--json", "out.json"])
        assert len(server.requests) == 12
        assert main(["simulate", "check", "--real", "real.jsonl", "--simulated", "sim.jsonl"]) == 0
        assert len(server.requests) == 12  # answers are cached like every judge verdict
    out = capsys.readouterr().out
    assert code == 0
    assert "discriminator openai/discriminator over 12 conversations: accuracy 100% (76%-100%)" in out
    assert "features it used: too polite (6), typos (6)" in out
    report = json.loads((project / "out.json").read_text(encoding="utf-8"))
    assert report["conversations"] == {"real": 6, "simulated": 6}
    assert report["accuracy_low"] == pytest.approx(0.7575, abs=1e-4)
    assert report["recall"] == {"real": 1.0, "simulated": 1.0}


def test_a_bad_transcript_line_names_the_file_and_line(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / "real.jsonl").write_text(conversation("ok", "hi") + '\n{"messages": [{"role": "bot"}]}\n')
    assert main(["simulate", "check", "--real", "real.jsonl", "--simulated", "sim.jsonl"]) == 2
    err = capsys.readouterr().err
    assert "real.jsonl:2: each message is {'role': 'user' | 'assistant', 'content': text}" in err


def test_an_unreachable_discriminator_is_an_error_not_a_crash(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert main(["simulate", "check", "--real", "real.jsonl", "--simulated", "sim.jsonl", "--no-cache"]) == 2
    assert "discriminator unavailable:" in capsys.readouterr().err


def test_without_a_model_it_says_how_to_set_one(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / "niceeval.config.py").write_text("from niceeval import define_config\n\nconfig = define_config()\n")
    assert main(["simulate", "check", "--real", "real.jsonl", "--simulated", "sim.jsonl"]) == 2
    assert "pass --grader openai/..." in capsys.readouterr().err


STORED_CONFIG = """\
from niceeval import define_config


def desk(message: str) -> str:
    return "Refunded." if "1042" in message else "Which order?"


config = define_config(agent=desk, judge={"model": "openai/discriminator"})
"""

SIMULATED_EVAL = """\
from niceeval import define_eval


@define_eval
async def refund(t):
    await t.simulate(user="novice", goal="a refund for order 1042", model="openai/user")
"""


def users_and_discriminator(request: LLMRequest) -> dict[str, object]:
    if request.model == "user":
        said = request.messages[-1].content
        if "agent: Refunded." in said:
            return {"goal_met": True, "agent_ended": False, "message": ""}
        text = "Order 1042." if "agent: Which order?" in said else "I would be most grateful for a refund."
        return {"goal_met": False, "agent_ended": False, "message": text}
    return sharp_eye(request)


def test_the_simulated_side_comes_from_the_stored_run(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (project / "niceeval.config.py").write_text(STORED_CONFIG, encoding="utf-8")
    (project / "evals").mkdir()
    (project / "evals" / "refund.py").write_text(SIMULATED_EVAL, encoding="utf-8")
    with LLMServer(users_and_discriminator) as server:
        monkeypatch.setenv("OPENAI_API_KEY", "test")
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        assert main(["run"]) == 0
        assert main(["simulate", "check", "--real", "real.jsonl", "--json", "out.json"]) == 0
    captured = capsys.readouterr()
    assert "1 simulated conversation(s) from suite run" in captured.err
    report = json.loads((project / "out.json").read_text(encoding="utf-8"))
    assert report["conversations"] == {"real": 6, "simulated": 1}
    (guess,) = [g for g in report["guesses"] if g["source"] == "simulated"]
    assert guess["name"] == "evals/refund.py::refund#0" and guess["simulated"] is True
