"""The framework examples (and the bridge example) are real projects: each runs offline (`niceeval run` against the
local scripted server)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
FRAMEWORKS = ["openai_agents_agent", "pydantic_ai_agent", "langgraph_agent"]


def run_example(name: str, tmp_path: Path) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    report = tmp_path / "report.json"
    done = subprocess.run(
        [sys.executable, "-m", "niceeval.cli", "run", "--json", str(report)],
        cwd=EXAMPLES / name,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return done, json.loads(report.read_text()) if report.exists() else {}


def events_of(report: dict[str, Any], eval_name: str) -> list[dict[str, Any]]:
    (entry,) = [e for e in report["evals"] if e["id"].endswith("::" + eval_name)]
    return [event for run in entry["runs"] for event in run["events"]]


@pytest.mark.slow
@pytest.mark.parametrize("name", FRAMEWORKS)
def test_framework_example_passes_offline_with_live_events(name: str, tmp_path: Path) -> None:
    done, report = run_example(name, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "4 passed" in done.stdout, done.stdout
    refused = events_of(report, "a_refused_cancellation_is_a_failed_tool_call")
    (call,) = [e for e in refused if e["type"] == "action.called"]
    assert (call["name"], call["status"], call["input"]) == ("cancel_order", "failed", {"order_id": "1234"})
    assert "has shipped and cannot be cancelled" in call["error"]
    looked_up = events_of(report, "looks_up_an_order")
    # Recorded as it happened: the model call, then the tool it asked for, then the next call, then the reply.
    # (The LangGraph example makes one more model call at the end, for its structured response.)
    kinds = [e["type"] for e in looked_up]
    assert kinds[:4] == ["message", "usage", "action.called", "usage"] and kinds[-1] == "message"
    assert {e["model"] for e in looked_up if e["type"] == "usage"} == {"openai/gpt-5-mini"}
    assert report["summary"]["agent_spend"]["cost"] > 0


@pytest.mark.slow
def test_bridge_example_passes_offline_recorded_through_the_bridge(tmp_path: Path) -> None:
    done, report = run_example("bridge_agent", tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "4 passed" in done.stdout, done.stdout
    unknown = events_of(report, "an_unknown_order_is_a_failed_tool_call")
    (call,) = [e for e in unknown if e["type"] == "action.called"]
    assert (call["name"], call["status"], call["input"]) == ("lookup_order", "failed", {"order_id": "9999"})
    assert call["error"] == "no order 9999"  # the agent's {"error": ...} result, read by the bridge
    looked_up = events_of(report, "looks_up_an_order")
    assert [e["type"] for e in looked_up] == ["message", "usage", "action.called", "usage", "message"]
    (lookup,) = [e for e in looked_up if e["type"] == "action.called"]
    assert lookup["output"] == {"order_id": "1234", "status": "shipped"}
    assert {e["model"] for e in looked_up if e["type"] == "usage"} == {"openai/gpt-5-mini"}
    assert report["summary"]["agent_spend"]["cost"] > 0
