"""The viewer's pages over a real store: what each shows, filters, flips, and 404s for what is not there."""

from __future__ import annotations

import re

from _stored import ActionCalledEvent, ErrorInfo, check, judged, record, result, talk
from starlette.testclient import TestClient

from niceeval._core.assertion import AssertionResult, JudgeCall
from niceeval.store import Store

REPLY = "Your refund for order #1234 is on its way."


def rows(html: str, table_class: str) -> list[str]:
    """The text of each body row of the table with this class, tags stripped."""
    body = html.split(f'<table class="data {table_class}">', 1)[1].split("</table>", 1)[0]
    return [re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", "<tr" + row)).strip() for row in body.split("<tr")[2:]]


def two_runs(store: Store) -> tuple[str, str]:
    """A baseline where `refund` passes, and a later run where it fails, `greeting` is new and `old` is gone."""
    base = record(store, [
        result("evals/a.py::refund", assertions=[judged("polite", 0.9, "polite", reply=REPLY)],
               events=talk(("refund please", REPLY))),
        result("evals/a.py::old"),
        result("evals/a.py::steady"),
    ])  # fmt: skip
    head = record(store, [
        result("evals/a.py::refund", "failed", assertions=[judged("polite", 0.2, "rude reply", reply="Go away.")],
               events=talk(("refund please", "Go away."))),
        result("evals/a.py::greeting"),
        result("evals/a.py::steady"),
    ])  # fmt: skip
    return base, head


def test_the_runs_list_shows_each_run_with_its_pass_rate_and_a_trend(store: Store, browser: TestClient) -> None:
    first = record(store, [result("evals/a.py::x"), result("evals/a.py::y", "failed")])
    second = record(store, [result("evals/a.py::x"), result("evals/a.py::y")])
    html = browser.get("/").text
    listed = rows(html, "runs")
    assert [line.split()[0] for line in listed] == [second, first]
    assert "100%" in listed[0] and "50%" in listed[1]
    assert html.count('<circle class="dot series-0"') == 2


def test_the_trend_draws_complete_runs_only_and_says_what_it_left_out(store: Store, browser: TestClient) -> None:
    full = [record(store, [result("evals/a.py::x"), result("evals/a.py::y", y)]) for y in ("passed", "failed")]
    others = [
        record(store, [result("evals/a.py::x", "failed")], kind="pytest"),
        record(store, [result("evals/a.py::x", "failed")], kind="rescore"),
        record(store, [result("evals/a.py::x", "failed")], kind="calibrate"),
        record(store, [result("evals/a.py::x", "failed")], status="interrupted"),
    ]
    rerun = record(store, [result("evals/a.py::x"), result("evals/a.py::y")], kind="rerun")
    html = browser.get("/").text
    drawn = re.findall(r'<a href="/runs/(\w+)"><circle class="dot series-0"', html)
    assert drawn == [*full, rerun]  # oldest first
    assert not set(drawn) & set(others)
    assert "The latest 3 complete runs of <code>niceeval run</code>; 4 runs between them left out" in html
    assert len(rows(html, "runs")) == 7  # the table still lists every run, each marked


def test_the_runs_list_and_its_trend_give_the_pass_rate_over_runs(store: Store, browser: TestClient) -> None:
    run = record(store, [result("evals/a.py::flaky", run_index=0), result("evals/a.py::flaky", "failed", run_index=1),
                         result("evals/a.py::flaky", run_index=2)])  # fmt: skip
    html = browser.get("/").text
    (line,) = rows(html, "runs")
    assert line.split()[0] == run and "67%" in line.split()  # 2 of 3 runs, though the eval's verdict is failed
    assert re.findall(r"<title>[^<]*\(\w{8}\): (\d+%)</title>", html) == ["67%"]
    assert "67%" in browser.get(f"/runs/{run}").text.split("Pass rate</div>")[1][:120]


def test_a_run_and_the_runs_list_weigh_each_eval_the_same_and_the_run_shows_the_interval(
    store: Store, browser: TestClient
) -> None:
    """Issue 41: the suite's rate is the mean of its evals' rates (3 of 3 and 0 of 1: 50%, not 3 of 4 runs),
    with the interval the console and the JSON report give."""
    run = record(store, [*(result("evals/a.py::steady", run_index=i) for i in range(3)),
                         result("evals/a.py::broken", "failed")])  # fmt: skip
    (line,) = rows(browser.get("/").text, "runs")
    assert "50%" in line.split()
    stat = browser.get(f"/runs/{run}").text.split("Pass rate</div>")[1][:400]
    assert "50%" in stat and "95% CI" in stat


def test_the_runs_list_is_paginated(store: Store, browser: TestClient) -> None:
    ids = [record(store, [result("evals/a.py::x")]) for _ in range(27)]
    first, second = browser.get("/").text, browser.get("/?page=2").text
    assert len(rows(first, "runs")) == 25 and 'href="/?page=2"' in first
    assert [line.split()[0] for line in rows(second, "runs")] == ids[1::-1]
    assert 'href="/?page=1"' in second and "page=3" not in second


def test_a_run_lists_failures_first(store: Store, browser: TestClient) -> None:
    run = record(store, [result("evals/a.py::ok"), result("evals/a.py::soft", "scored"),
                         result("evals/a.py::bad", "failed")])  # fmt: skip
    listed = rows(browser.get(f"/runs/{run}").text, "evals")
    assert [line.split()[:2] for line in listed] == [
        ["failed", "evals/a.py::bad"], ["scored", "evals/a.py::soft"], ["passed", "evals/a.py::ok"]
    ]  # fmt: skip


def test_each_eval_names_its_first_miss_as_the_html_report_does(store: Store, browser: TestClient) -> None:
    failing = JudgeCall(model="openai/gpt-judge", score=0.9, passed=False, reason="rude")
    run = record(store, [
        result("evals/a.py::crash", "failed", error=ErrorInfo(kind="exception", type="KeyError", message="'id'")),
        result("evals/a.py::judged", "failed", run_index=0, assertions=[
            check("includes('x')"),
            check("rubric('polite')", "failed", score=0.9, threshold=0.0, judge_calls=[failing]),
        ]),
        result("evals/a.py::judged", "failed", run_index=1, assertions=[check("equals(2)", "failed")]),
        result("evals/a.py::soft", "scored", assertions=[check("similarity", "failed", severity="soft", score=0.4,
                                                                 threshold=0.6)]),
        result("evals/a.py::ok"),
    ])  # fmt: skip
    html = browser.get(f"/runs/{run}").text
    lines = {m[0]: (m[2], bool(m[1])) for m in re.findall(
        r'>(evals/a\.py::\w+)</a>\s*<div class="error-line( soft-line)?">([^<]*)<', html)}  # fmt: skip
    assert lines == {
        "evals/a.py::crash": ("KeyError: &#39;id&#39;", False),
        "evals/a.py::judged": ("rubric(&#39;polite&#39;): judge said fail (score 0.90)", False),
        "evals/a.py::soft": ("similarity: score 0.40 &lt; 0.60", True),
    }


def test_a_run_shows_the_pass_rate_over_repeated_runs(store: Store, browser: TestClient) -> None:
    run = record(store, [result("evals/a.py::flaky", run_index=0), result("evals/a.py::flaky", "failed", run_index=1),
                         result("evals/a.py::flaky", run_index=2)])  # fmt: skip
    (line,) = rows(browser.get(f"/runs/{run}").text, "evals")
    assert "2/3 (67%) 95% CI 21%-94%" in line and line.startswith("failed")


def test_a_run_filters_by_outcome_tag_and_text(store: Store, browser: TestClient) -> None:
    run = record(
        store,
        [result("evals/a.py::refund"), result("evals/a.py::search", "failed"), result("evals/b.py::refund_late")],
        tags={"evals/a.py::refund": ["billing"], "evals/b.py::refund_late": ["billing", "slow"]},
    )
    ids = lambda query: [line.split()[1] for line in rows(browser.get(f"/runs/{run}?{query}").text, "evals")]  # noqa: E731
    assert ids("outcome=failed") == ["evals/a.py::search"]
    assert ids("tag=billing") == ["evals/a.py::refund", "evals/b.py::refund_late"]
    assert ids("q=LATE") == ["evals/b.py::refund_late"]
    assert "No eval matches these filters." in browser.get(f"/runs/{run}?tag=slow&outcome=failed").text


def test_a_run_summarises_judge_calls_inconclusive_causes_and_spend(store: Store, browser: TestClient) -> None:
    run = record(store, [result("evals/a.py::x", assertions=[
        judged("polite", 0.9, "fine", reply=REPLY),
        check("factual", "inconclusive", severity="soft", cause="no_api_key", reason="no key", judge_calls=[
            JudgeCall(model="openai/gpt-judge", asked=False, cause="no_api_key", reason="no key"),
        ]),
    ])])  # fmt: skip
    html = browser.get(f"/runs/{run}").text
    assert "<code>openai/gpt-judge</code></th><td>1 call</td>" in html
    assert "1 not sent</span> · 150 tokens · $0.0004" in html  # the keyless one: neither a call nor cached
    assert '<span class="badge inconclusive">no_api_key</span> 1' in html
    assert "$0.0005" in html  # agent 0.0001 + judge 0.0004


def test_an_unknown_run_is_a_404_page(browser: TestClient) -> None:
    response = browser.get("/runs/nope")
    assert response.status_code == 404 and "no suite run &#39;nope&#39;" in response.text


def test_an_eval_run_shows_the_conversation_round_by_round(store: Store, browser: TestClient) -> None:
    lookup = ActionCalledEvent(name="lookup_order", input={"order_id": "1234"}, output={"status": "shipped"})
    events = talk(("I want a refund", REPLY), ("When?", "Within 5 days."), tools=[lookup])
    run = record(store, [result("evals/a.py::refund", events=events)])
    html = browser.get(f"/runs/{run}/eval?id=evals/a.py::refund").text
    rounds = html.split('<section class="round">')[1:]
    assert len(rounds) == 2
    assert "I want a refund" in rounds[0] and REPLY in rounds[0] and "lookup_order" in rounds[0]
    assert "&#34;order_id&#34;: &#34;1234&#34;" in rounds[0] and "&#34;shipped&#34;" in rounds[0]
    assert "When?" in rounds[1] and "Within 5 days." in rounds[1] and "lookup_order" not in rounds[1]


def test_a_judge_verdict_shows_under_the_round_it_judged(store: Store, browser: TestClient) -> None:
    events = talk(("hi", "Hello there."), ("refund please", REPLY))
    verdict = judged("names the order", 0.4, "It names no timeline.", reply=REPLY)
    run = record(store, [result("evals/a.py::refund", "scored", events=events, assertions=[verdict])])
    html = browser.get(f"/runs/{run}/eval?id=evals/a.py::refund").text
    first, second = html.split('<section class="round">')[1:]
    assert "It names no timeline." not in first
    assert '<div class="verdict failed">' in second and "It names no timeline." in second


def test_an_eval_run_shows_every_assertion_field_and_the_exact_judge_prompt(store: Store, browser: TestClient) -> None:
    run = record(store, [result("evals/a.py::x", "failed", assertions=[
        check("equals", "failed", expected="'refund'", actual="'ship'", reason="$.intent differs",
              location="evals/a.py:7"),
        judged("polite", 0.3, "Curt.", reply=REPLY),
    ])])  # fmt: skip
    html = browser.get(f"/runs/{run}/eval?id=evals/a.py::x").text
    assertions = html.split("<h2>Assertions")[1]
    for text in (
        "equals",
        "&#39;refund&#39;",
        "&#39;ship&#39;",
        "$.intent differs",
        "evals/a.py:7",
        "gate",
        "score 0.00 / threshold 1.00",
        "Curt.",
        "openai/gpt-judge",
        "You are an expert evaluator.",
    ):
        assert text in assertions, text  # fmt: skip
    assert f"&lt;ai_response&gt;\n{REPLY}" in assertions  # the prompt exactly as sent, escaped


def test_a_judge_without_a_threshold_shows_that_its_pass_flag_decided(store: Store, browser: TestClient) -> None:
    def rubric(name: str, passed: bool, threshold: float) -> AssertionResult:
        call = JudgeCall(model="openai/gpt-judge", score=0.9, passed=passed, reason="why")
        state = "passed" if passed and 0.9 >= threshold else "failed"
        return check(name, state, score=0.9, threshold=threshold, severity="soft", judge_calls=[call])

    run = record(store, [result("evals/a.py::x", "failed", assertions=[
        rubric("rubric('free')", True, 0.0),
        rubric("rubric('vetoed')", False, 0.0),
        rubric("rubric('both')", True, 0.7),
        check("equals", "failed"),
    ])])  # fmt: skip
    html = browser.get(f"/runs/{run}/eval?id=evals/a.py::x").text
    shown = re.findall(r'<span class="score">([^<]+)</span>', html.split("<h2>Assertions")[1])
    assert shown == [
        "score 0.90 · judge said pass (no threshold)",
        "score 0.90 · judge said fail (no threshold)",
        "score 0.90 / threshold 0.70 · judge said pass",
        "score 0.00 / threshold 1.00",
    ]
    assert "/ 0.00" not in html and "threshold 0.00" not in html


def test_a_judge_calls_tokens_count_as_the_spend_does(store: Store, browser: TestClient) -> None:
    fresh = JudgeCall(model="openai/j", score=0.9, input_tokens=100, output_tokens=10, cache_read_tokens=1000,
                      cost=0.0004)  # fmt: skip
    cached = fresh.model_copy(update={"cached": True, "asked": False, "cost": 0.0})
    run = record(store, [result("evals/a.py::x", assertions=[
        check("rubric('a')", score=0.9, threshold=0.5, judge_calls=[fresh]),
        check("rubric('b')", score=0.9, threshold=0.5, judge_calls=[cached]),
    ])])  # fmt: skip
    html = browser.get(f"/runs/{run}/eval?id=evals/a.py::x").text
    heads = [re.sub(r"<[^>]+>", "", h) for h in re.findall(r'<div class="judge-head">(.*?)</div>', html)]
    assert [" · ".join(h.split(" · ")[2:4]) for h in heads] == [
        "1,110 tokens · $0.0004",
        "1,110 tokens when first asked · $0",
    ]


def test_an_eval_run_shows_the_error_with_its_traceback(store: Store, browser: TestClient) -> None:
    error = ErrorInfo(type="KeyError", message="'order'", location="evals/a.py:31",
                      traceback='File "evals/a.py", line 31\nKeyError: \'order\'')  # fmt: skip
    run = record(store, [result("evals/a.py::x", "failed", error=error)])
    html = browser.get(f"/runs/{run}/eval?id=evals/a.py::x").text
    assert "Exception: KeyError" in html and "evals/a.py:31" in html and "line 31\nKeyError" in html


def test_an_eval_run_shows_each_sandbox_command_with_its_output(store: Store, browser: TestClient) -> None:
    command = ActionCalledEvent(name="pytest", kind="shell", input={"command": "pytest -q"}, status="failed",
                                output={"stdout": "1 failed", "stderr": "boom"}, exit_code=1)  # fmt: skip
    run = record(store, [result("evals/a.py::x", "failed", events=[command])])
    sandbox = browser.get(f"/runs/{run}/eval?id=evals/a.py::x").text.split("<h2>Sandbox</h2>")[1]
    assert "<code>pytest -q</code>" in sandbox and "exit 1" in sandbox and "1 failed" in sandbox and "boom" in sandbox


def test_an_eval_run_shows_the_workspace_diff_per_file_highlighted(store: Store, browser: TestClient) -> None:
    diff = (
        "diff --git a/app.py b/app.py\n--- a/app.py\n+++ b/app.py\n@@ -1 +1 @@\n-VALUE = 1\n+VALUE = 2\n"
        "diff --git a/notes.txt b/notes.txt\n--- /dev/null\n+++ b/notes.txt\n@@ -0,0 +1 @@\n+<script>alert(1)</script>"
    )
    run = record(store, [result("evals/a.py::x").model_copy(update={"workspace_diff": diff})])
    sandbox = browser.get(f"/runs/{run}/eval?id=evals/a.py::x").text.split("<h2>Sandbox</h2>")[1]
    assert "Workspace diff: 2 files changed" in sandbox
    app, notes = sandbox.split("<summary><code>")[1:3]
    assert app.startswith("app.py</code>") and notes.startswith("notes.txt</code>")
    assert '<span class="diff-del">-<span class="n">VALUE</span>' in app  # Python, highlighted by Pygments
    assert '<span class="mi">2</span></span>' in app and '<span class="diff-hunk">@@ -1 +1 @@</span>' in app
    assert '<span class="diff-add">+&lt;script&gt;alert(1)&lt;/script&gt;</span>' in notes  # plain text, escaped
    assert "<script>alert" not in sandbox


def test_an_eval_run_that_does_not_exist_is_a_404_page(store: Store, browser: TestClient) -> None:
    run = record(store, [result("evals/a.py::x")])
    assert browser.get(f"/runs/{run}/eval?id=evals/a.py::nope").status_code == 404
    assert browser.get(f"/runs/{run}/eval").status_code == 400


def test_compare_lists_flips_first_with_new_and_gone_evals(store: Store, browser: TestClient) -> None:
    base, head = two_runs(store)
    html = browser.get(f"/compare?base={base}&head={head}").text
    assert rows(html, "flips") == [
        "evals/a.py::refund passed → failed 1/1 → 0/1 noise: -1.00 (95% -1.00 to +0.12), 1 vs 1 runs: not enough to "
        "tell – side by side"
    ]
    assert "1 shared case: not enough to tell" in html or "shared cases: not enough to tell" in html
    assert "evals/a.py::greeting" in html.split("New evals")[1].split("</section>")[0]
    assert "evals/a.py::old" in html.split("Gone evals")[1].split("</section>")[0]
    assert "0.90" in rows(html, "scores")[0] and "-0.70" in rows(html, "scores")[0]


def test_compare_lists_each_scored_assertions_paired_test_strongest_evidence_first(
    store: Store, browser: TestClient
) -> None:
    def suite(tone: list[float], brevity: list[float]) -> str:
        return record(store, [
            result(f"evals/a.py::c{i}", assertions=[judged("tone", t, "r", reply=REPLY, threshold=0.1),
                                                    judged("brevity", b, "r", reply=REPLY, threshold=0.1)])
            for i, (t, b) in enumerate(zip(tone, brevity, strict=True))
        ])  # fmt: skip

    base = suite([0.9, 0.8, 0.85, 0.9, 0.8, 0.9, 0.85, 0.8], [0.5, 0.6, 0.5, 0.6, 0.5, 0.6, 0.5, 0.6])
    head = suite([0.6, 0.5, 0.6, 0.7, 0.5, 0.6, 0.6, 0.5], [0.6, 0.5, 0.5, 0.6, 0.6, 0.6, 0.5, 0.5])
    html = browser.get(f"/compare?base={base}&head={head}").text
    tone, brevity = rows(html, "mean-scores")
    assert tone == "tone 8 0.85 0.57 regression: -0.28 (95% -0.31 to -0.24), p=1.61e-07 (paired t) 3.21e-07"
    assert brevity == "brevity 8 0.55 0.55 unchanged: +0.00 (95% -0.06 to +0.06), p=1 (paired t) 1"
    assert '<tr class="row-failed">\n    <td class="mono">tone</td>' in html
    assert "The gate fails: score tone: -0.28" in html


def test_compare_defaults_to_the_latest_run_against_the_one_before(store: Store, browser: TestClient) -> None:
    base, head = two_runs(store)
    html = browser.get("/compare").text
    assert f'<option value="{base}" selected>' in html.split('name="base"')[1].split("</select>")[0]
    assert f'<option value="{head}" selected>' in html.split('name="head"')[1].split("</select>")[0]


def test_compare_lists_every_eval_only_when_asked(store: Store, browser: TestClient) -> None:
    base, head = two_runs(store)
    assert '<table class="data pairs">' not in browser.get(f"/compare?base={base}&head={head}").text
    every = rows(browser.get(f"/compare?base={base}&head={head}&show=all").text, "pairs")
    assert sorted(line.split()[0] for line in every) == [
        "evals/a.py::greeting", "evals/a.py::old", "evals/a.py::refund", "evals/a.py::steady"
    ]  # fmt: skip
    assert next(line for line in every if line.startswith("evals/a.py::steady")).split()[1:3] == ["passed", "passed"]


def test_compare_needs_two_runs(store: Store, browser: TestClient) -> None:
    record(store, [result("evals/a.py::x")])
    assert "Comparing needs two recorded runs; this store has 1." in browser.get("/compare").text


def test_compare_shows_an_evals_two_replies_side_by_side(store: Store, browser: TestClient) -> None:
    base, head = two_runs(store)
    html = browser.get(f"/compare/eval?base={base}&head={head}&id=evals/a.py::refund").text
    before, after = html.split('<section class="side">')[1:]
    assert REPLY in before and "Go away." not in before
    assert "Go away." in after and REPLY not in after
    assert "-0.70" in html.split("<h2>Assertions</h2>")[1]


def test_history_charts_an_eval_across_suite_runs(store: Store, browser: TestClient) -> None:
    for outcome, score in (("passed", 0.9), ("failed", 0.2), ("passed", 0.8)):
        record(store, [result("evals/a.py::x", outcome, assertions=[judged("polite", score, "r", reply=REPLY)])])
    html = browser.get("/evals/history?id=evals/a.py::x").text
    trend = html.split("Pass rate</h2>")[1].split("</section>")[0]
    assert re.findall(r"<title>[^<]*: (\d+%)</title>", trend) == ["100%", "0%", "100%"]
    heat = html.split("Assertions × runs")[1].split("</section>")[0]
    assert heat.count('class="cell passed"') == 2 and heat.count('class="cell failed"') == 1
    assert "coloured by its mean score" in heat and "red 0, amber 0.5, green 1" in heat  # the fill is the score
    assert len(rows(html, "history")) == 3


def test_history_of_an_eval_that_never_ran_says_so(browser: TestClient) -> None:
    assert "This eval has no recorded runs." in browser.get("/evals/history?id=evals/none.py::x").text


def test_compare_of_two_alike_runs_says_nothing_changed(store: Store, browser: TestClient) -> None:
    base, head = (record(store, [result("evals/a.py::x")]) for _ in range(2))
    html = browser.get(f"/compare?base={base}&head={head}").text
    assert "Nothing changed between these runs." in html and "No eval changed its outcome." in html


def test_compare_of_runs_sharing_no_eval_says_so_and_keeps_the_pickers(store: Store, browser: TestClient) -> None:
    base = record(store, [result("evals/a.py::x")])
    head = record(store, [result("evals/b.py::y")])
    shown = browser.get("/compare")  # the default pair: a page to pick other runs from, not an error
    assert shown.status_code == 200
    assert "no eval in common" in shown.text.lower() or "share no eval" in shown.text.lower()
    assert f'<option value="{base}" selected>' in shown.text.split('name="base"')[1].split("</select>")[0]
    picked = browser.get(f"/compare?base={head}&head={head}")  # a pair the user picked: refused, with the reason
    assert picked.status_code == 400
    assert "both name" in picked.text


def test_an_eval_run_names_its_docker_container_and_the_runs_that_shared_it(store: Store, browser: TestClient) -> None:
    from niceeval._core.results import SandboxRecord

    box = SandboxRecord(kind="docker", open_s=0.3, container="1a2b3c4d5e6f", attempts=[0, 1, 2],
                        image="niceeval-build:9f", image_size_bytes=253_000_000, image_build_s=4.1)  # fmt: skip
    run = record(store, [result("evals/a.py::x").model_copy(update={"sandbox": box, "run_index": 2})])
    page = browser.get(f"/runs/{run}/eval?id=evals/a.py::x&run=2").text.split("<h2>Sandbox</h2>")[1]
    assert "Docker container <code>1a2b3c4d5e6f</code>, shared by runs 0, 1, 2" in page
    assert "image <code>niceeval-build:9f</code>, 253 MB, built in 4.1 s; opened in 0.3 s" in page
    assert store.eval_run(run, "evals/a.py::x", 2).sandbox == box
