"""`niceeval cases from-trace`: a failing production trace becomes a regression eval that fails the same way offline."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import pytest
from pydantic_ai import Agent

from niceeval._core.errors import ConfigError
from niceeval._run.discovery import discover
from niceeval._run.execute import ExecOptions, execute
from niceeval.agents import pydantic_ai_agent
from niceeval.cli import main
from niceeval.online._score import score
from niceeval.online._stored import OnlineRecord
from niceeval.store import SuiteRunStart
from niceeval.store._recorder import Recorder
from niceeval.testing import LLMServer, ToolCall
from niceeval.tracing import Trace
from niceeval.tracing._otlp import decode
from tests.online.online_helpers import chat_trace

ONLINE = """from niceeval import define_eval
from niceeval.expect import includes


@define_eval(online=True)
async def helpful(t):
    t.check(t.reply, includes("refund"))
    t.called_tool("search")
    t.check(t.input, includes("refund"))
"""


def stored_trace(root: Path, question: str, answer: str, **kwargs: object) -> str:
    """A production trace scored by the online eval and stored as `niceeval watch` stores it; its id."""
    (root / "evals").mkdir(exist_ok=True)
    (root / "evals" / "online.py").write_text(ONLINE, encoding="utf-8")
    (entry,) = discover(root, ["evals"]).online
    trace_id, payload = chat_trace(question, answer, **kwargs)  # type: ignore[arg-type]
    trace = Trace.of(decode(payload, "application/json"))
    result = anyio.run(score, entry, trace, ExecOptions(timeout=10, root=root), 0)
    recorder = Recorder.open(str(root / ".niceeval" / "results.db"), root)
    record = OnlineRecord(recorder, SuiteRunStart(id="x", root=str(root)), [entry], clock=lambda: 0.0)
    record.add([result])
    record.close()
    recorder.close()
    return trace_id


def test_a_failing_trace_becomes_a_regression_that_fails_the_same_way_offline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    trace_id = stored_trace(tmp_path, "where is my refund?", "I cannot help with that.", tool="lookup")
    assert main(["cases", "from-trace", trace_id]) == 0
    said = capsys.readouterr().out
    assert f"saved trace {trace_id} (3 spans) to evals/regressions/{trace_id}.json" in said
    saved = json.loads((tmp_path / "evals" / "regressions" / f"{trace_id}.json").read_text())
    assert saved["trace_id"] == trace_id and len(saved["spans"]) == 3
    module = (tmp_path / "evals" / "regressions.py").read_text()
    assert f'@define_eval(name="trace_{trace_id[:12]}", trace="regressions/{trace_id}.json")' in module
    (entry,) = discover(tmp_path, ["evals/regressions.py"]).evals
    result = anyio.run(execute, entry, 0, ExecOptions(timeout=10, root=tmp_path))
    assert result.outcome == "failed"
    assert [(a.name, a.state) for a in result.assertions] == [
        ("includes('refund')", "failed"),
        ("includes('refund')", "passed"),
        ("called_tool('search')", "failed"),
    ]
    assert main(["cases", "from-trace", trace_id]) == 2  # a second time: already there, nothing written
    assert f"already has trace_{trace_id[:12]}" in capsys.readouterr().err


def test_a_plain_def_online_eval_gets_a_plain_def_regression(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys.modules[__name__], "ONLINE", ONLINE.replace("async def helpful", "def helpful"))
    trace_id = stored_trace(tmp_path, "refund?", "no idea")
    assert main(["cases", "from-trace", trace_id]) == 0
    module = (tmp_path / "evals" / "regressions.py").read_text()
    assert f"\ndef trace_{trace_id[:12]}(t):\n" in module and "    helpful_online(t)\n" in module
    (entry,) = discover(tmp_path, ["evals/regressions.py"]).evals
    result = anyio.run(execute, entry, 0, ExecOptions(timeout=10, root=tmp_path))
    assert result.error is None and result.outcome == "failed"


def test_an_unknown_trace_says_which_traces_are_stored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    stored_trace(tmp_path, "refund?", "refund sent")
    with pytest.raises(ConfigError, match=r"no stored online result of trace 0+: `niceeval watch` stores"):
        from niceeval.cli._from_trace import _from_trace

        _from_trace(
            type(
                "Args",
                (),
                {
                    "trace_id": "0" * 32,
                    "eval": None,
                    "store": None,
                    "config": None,
                    "to": Path("x"),
                    "replay": None,
                    "agent": None,
                },
            )()
        )


def test_a_live_replay_of_an_agent_that_cannot_replay_its_tools_is_refused_before_anything_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    trace_id = stored_trace(tmp_path, "where is my refund?", "I cannot help with that.", tool="lookup")
    (tmp_path / "niceeval.config.py").write_text(
        "from niceeval import define_config\n\nconfig = define_config(agent=lambda message: 'echo: ' + message)\n"
    )
    assert main(["cases", "from-trace", trace_id]) == 2
    said = capsys.readouterr().err
    assert "the agent <lambda> (a plain function) cannot have its tools answered from a trace" in said
    assert "`niceeval cases from-trace TRACE_ID --replay recorded`" in said
    assert not (tmp_path / "evals" / "regressions.py").exists()
    assert not (tmp_path / "evals" / "regressions").exists()
    assert main(["cases", "from-trace", trace_id, "--replay", "recorded"]) == 0  # the alternative it names
    module = (tmp_path / "evals" / "regressions.py").read_text()
    assert f'@define_eval(name="trace_{trace_id[:12]}", trace="regressions/{trace_id}.json")\n' in module


def test_a_named_agent_that_is_not_module_colon_name_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    trace_id = stored_trace(tmp_path, "refund?", "no idea")
    assert main(["cases", "from-trace", trace_id, "--agent", "nowhere:agent"]) == 2
    assert "--agent nowhere:agent: cannot import it (No module named 'nowhere'); give MODULE:NAME" in (
        capsys.readouterr().err
    )
    assert main(["cases", "from-trace", trace_id, "--replay", "recorded", "--agent", "x:y"]) == 2
    assert "--agent names the agent a live replay runs" in capsys.readouterr().err
    assert not (tmp_path / "evals" / "regressions.py").exists()


def test_a_live_replay_eval_whose_agent_cannot_replay_errors_naming_the_alternative(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    trace_id = stored_trace(tmp_path, "where is my refund?", "I cannot help with that.", tool="lookup")
    assert main(["cases", "from-trace", trace_id, "--replay", "recorded"]) == 0
    module = tmp_path / "evals" / "regressions.py"
    module.write_text(module.read_text().replace('.json")', '.json", replay="live")'))
    (entry,) = discover(tmp_path, ["evals/regressions.py"]).evals
    result = anyio.run(execute, entry, 0, ExecOptions(timeout=10, root=tmp_path, agent=lambda m: m))
    assert result.outcome == "failed" and result.error is not None and result.error.kind == "usage"
    assert "cannot have its tools answered from a trace" in result.error.message
    assert "--replay recorded" in result.error.message


def test_a_regressions_module_that_cannot_be_written_is_named_and_nothing_is_lost(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    trace_id = stored_trace(tmp_path, "refund?", "no idea")
    (tmp_path / "evals" / "regressions.py").mkdir(parents=True)  # a folder where the module should be
    assert main(["cases", "from-trace", trace_id, "--replay", "recorded"]) == 2
    said = capsys.readouterr().err
    assert f"cannot write the regression of trace {trace_id}: Is a directory" in said
    assert "choose a writable module with --to PATH" in said


def test_a_trace_id_that_is_not_32_hex_digits_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    stored_trace(tmp_path, "refund?", "no idea")
    assert main(["cases", "from-trace", "../../evil", "--replay", "recorded"]) == 2
    assert "'../../evil' is not a trace id: give its 32 hex digits" in capsys.readouterr().err
    assert not (tmp_path / "evals" / "regressions.py").exists()


def test_a_live_replay_whose_agent_calls_a_tool_the_trace_never_made_errors_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, llm_server: LLMServer
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    trace_id = stored_trace(tmp_path, "where is my refund?", "I cannot help with that.", tool="lookup")
    assert main(["cases", "from-trace", trace_id, "--replay", "recorded"]) == 0
    module = tmp_path / "evals" / "regressions.py"
    module.write_text(module.read_text().replace('.json")', '.json", replay="live")'))
    ran: list[str] = []

    def refund(order_id: str) -> str:
        """Refund an order."""
        ran.append(order_id)
        return "refunded"

    llm_server.push(ToolCall(name="refund", arguments={"order_id": "9"}), "Refunded.")
    agent = pydantic_ai_agent(
        Agent("openai:gpt-5-mini", tools=[refund], defer_model_check=True), base_url=llm_server.base_url
    )
    (entry,) = discover(tmp_path, ["evals/regressions.py"]).evals
    result = anyio.run(execute, entry, 0, ExecOptions(timeout=10, root=tmp_path, agent=agent))
    assert ran == [] and result.outcome == "failed" and result.error is not None
    assert result.error.type == "UnrecordedToolCall"
    assert result.error.message.startswith(
        'the agent called refund({"order_id": "9"}), which the recorded trace cannot answer: the trace never called '
        "refund; it recorded: lookup("
    )
