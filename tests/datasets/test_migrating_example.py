"""examples/migrating: the peers' own files and the hand-written eval modules beside them give the same pass/fail
per case, offline (`niceeval run` against the local scripted server)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "migrating"
PEER_FILES = ["promptfooconfig.yaml", "pydantic_evals/capitals.yaml", "inspect/capitals.jsonl"]


def run(tmp_path: Path, name: str, *paths: str) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    report = tmp_path / f"{name}.json"
    done = subprocess.run(
        [sys.executable, "-m", "niceeval.cli", "run", *paths, "--no-store", "--no-cache", "--json", str(report)],
        cwd=EXAMPLE,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1, done.stdout + done.stderr  # each suite has misses: the model mixes up capitals
    return {"report": json.loads(report.read_text()), "stderr": done.stderr}


def verdicts(report: dict[str, Any]) -> dict[tuple[str, str], str]:
    """(peer, case id) -> the eval's status, from either kind of id."""
    found = {}
    for entry in report["evals"]:
        match = re.match(r"(?:evals/)?(promptfoo|pydantic|inspect)[^:]*::\w+\[([^\]]+)\]", entry["id"])
        assert match, entry["id"]
        found[(match[1], match[2])] = entry["status"]
    return found


@pytest.mark.slow
def test_the_peers_files_and_the_hand_written_modules_agree_case_by_case(tmp_path: Path) -> None:
    peers = run(tmp_path, "peers", *PEER_FILES)
    written = run(tmp_path, "written")
    from_files, by_hand = verdicts(peers["report"]), verdicts(written["report"])
    assert from_files == by_hand
    assert len(from_files) == 11
    assert sorted(key for key, status in from_files.items() if status == "failed") == [
        ("inspect", "australia"),
        ("promptfoo", "Australia"),
        ("promptfoo", "Canada"),
        ("pydantic", "canada"),
    ]
    judged = [a for e in peers["report"]["evals"] for r in e["runs"] for a in r["assertions"] if a["judge_calls"]]
    assert len(judged) == 7 and all(a["state"] != "inconclusive" for a in judged)  # the offline judge answered
    assert "not mapped: inspect/capitals.jsonl: Inspect: chat input" in peers["stderr"]
