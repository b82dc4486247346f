"""A sampled judge (`samples=K`) in the viewer: the unstable mark, and every sample's verdict."""

from __future__ import annotations

import re

from _stored import check, record, result
from starlette.testclient import TestClient

from niceeval._core.assertion import JudgeCall
from niceeval.store import Store


def test_an_unstable_verdict_is_marked_stored_and_shows_every_sample(store: Store, browser: TestClient) -> None:
    calls = [
        JudgeCall(model="openai/gpt-judge", score=value, passed=True, reason=f"sample said {value}")
        for value in (0.72, 0.68, 0.74)
    ]
    unstable = check("rubric('polite')", "passed", score=0.713, threshold=0.7, severity="soft", unstable=True,
                     judge_calls=calls, reason="mean 0.71 (sd 0.03) of 3 of 3 samples")  # fmt: skip
    steady = check("rubric('kind')", "passed", score=0.9, threshold=0.7, severity="soft", judge_calls=calls[:1])
    run = record(store, [result("evals/a.py::x", "passed", assertions=[unstable, steady])])
    stored = store.eval_run(run, "evals/a.py::x")
    assert [a.unstable for a in stored.assertions] == [True, False]
    html = browser.get(f"/runs/{run}/eval?id=evals/a.py::x").text.split("<h2>Assertions")[1]
    first, second = html.split('<details class="assertion', 2)[1:]
    assert first.startswith(' passed" open') and 'class="badge unstable"' in first
    assert [m for m in re.findall(r"sample said [\d.]+", first)] == [
        "sample said 0.72", "sample said 0.68", "sample said 0.74"
    ]  # fmt: skip
    assert "badge unstable" not in second and not second.startswith(' passed" open')


def test_a_sampled_rubric_without_threshold_says_how_many_samples_passed(store: Store, browser: TestClient) -> None:
    calls = [JudgeCall(model="openai/gpt-judge", score=0.9, passed=flag, reason="why") for flag in (True, False, True)]
    sampled = check("rubric('free')", "passed", score=0.9, threshold=0.0, severity="soft", judge_calls=calls,
                    unstable=True)  # fmt: skip
    run = record(store, [result("evals/a.py::x", "passed", assertions=[sampled])])
    html = browser.get(f"/runs/{run}/eval?id=evals/a.py::x").text
    shown = re.findall(r'<span class="score">([^<]+)</span>', html.split("<h2>Assertions")[1])
    assert shown == ["score 0.90 · 2 of 3 samples said pass (no threshold)"]
