"""Score evals: `define_eval(points=N)`, `t.score(n, ...)`, `.points(n)` on a check, their means and gates."""

from __future__ import annotations

import json
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from niceeval import UsageError, define_eval
from niceeval._core.assertion import AssertionResult
from niceeval._core.outcome import fold
from niceeval.cli._main import main
from niceeval.expect import includes
from niceeval.store import Store
from niceeval.web import Access, ViewerSettings, create_app

EVALS = """\
from niceeval import define_eval
from niceeval.expect import includes


@define_eval(points=3)
def strict_marks(t):
    t.score(1, "parses the file")
    t.check("abc", includes("b").points(1))
    t.check("abc", includes("z").points(1))


@define_eval(points=3, points_to_pass=2)
def lenient_marks(t):
    t.score(1, "parses the file")
    t.check("abc", includes("b").points(1))
    t.check("abc", includes("z").points(1))


@define_eval(points=3)
def full_marks(t):
    t.score(2, "parses the file")
    t.check("abc", includes("a").points(1))
"""

CASES = """\
from niceeval import define_eval

EARNED = {"a": 4, "b": 2, "c": 3}


@define_eval(points=4, points_to_pass=2, cases=[{"id": "a"}, {"id": "b"}, {"id": "c"}])
def graded(t):
    t.score(EARNED[t.case["id"]], "what the case earns")
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "marks.py").write_text(EVALS)
    (tmp_path / "graded.py").write_text(CASES)
    return tmp_path


def run(*args: str) -> int:
    return main(["run", *args])


def report(path: Path) -> dict[str, object]:
    data: dict[str, object] = json.loads(path.read_text())
    return data


def evals_by_name(data: dict[str, object]) -> dict[str, dict[str, object]]:
    return {e["id"].split("::")[1]: e for e in data["evals"]}  # type: ignore[attr-defined,index]


def test_a_run_records_the_points_it_earned_of_the_points_possible(project: Path) -> None:
    assert run("marks.py", "--no-store", "--json", "out.json") == 1
    evals = evals_by_name(report(project / "out.json"))
    runs = {name: e["runs"][0] for name, e in evals.items()}  # type: ignore[index]
    assert {name: (r["points"], r["points_possible"]) for name, r in runs.items()} == {
        "strict_marks": (2.0, 3.0),
        "lenient_marks": (2.0, 3.0),
        "full_marks": (3.0, 3.0),
    }
    earned = [(a["name"], a["points"], a["state"]) for a in runs["strict_marks"]["assertions"]]
    assert earned == [
        ("parses the file", 1.0, "passed"),
        ("includes('b')", 1.0, "passed"),
        ("includes('z')", 1.0, "failed"),
    ]


def test_a_run_passes_on_every_point_unless_points_to_pass_says_fewer(project: Path) -> None:
    assert run("marks.py", "--no-store", "--json", "out.json") == 1
    evals = evals_by_name(report(project / "out.json"))
    outcomes = {name: e["runs"][0]["outcome"] for name, e in evals.items()}  # type: ignore[index]
    assert outcomes == {"strict_marks": "failed", "lenient_marks": "passed", "full_marks": "passed"}


def test_a_missed_check_worth_points_loses_them_without_failing_the_run() -> None:
    missed = AssertionResult(name="x", severity="soft", score=0.0, threshold=1.0, state="failed", points=1.0)
    assert fold([missed]) == "passed"
    assert fold([missed], points_short=True) == "failed"
    assert fold([missed], points_short=True, skipped=True) == "skipped"
    plain_soft = missed.model_copy(update={"points": None})
    assert fold([plain_soft]) == "scored"


def test_the_console_shows_points_earned_of_possible_and_the_points_not_earned(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run("marks.py", "--no-store")
    out = capsys.readouterr().out
    assert " FAIL   marks.py::strict_marks  2/3 points" in out
    assert " PASS   marks.py::lenient_marks  2/3 points" in out
    assert "~ includes('z') [1 point(s) not earned] score 0.00 < 1.00  marks.py:9" in out


def test_the_mean_points_and_their_interval_cluster_the_runs_by_case(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run("graded.py", "--no-store", "--runs", "2", "--json", "out.json") == 0
    data = report(project / "out.json")
    mean = data["summary"]["mean_points"]  # type: ignore[index]
    # per case 4/4, 2/4, 3/4 twice each: mean 0.75; the three case sums 2, 1, 1.5 over 6 runs give a clustered
    # standard error of sqrt(3/2 * 0.5) / 6, and t(0.975, 2 df) = 4.302653 gives the half-width.
    assert mean["value"] == pytest.approx(0.75)
    assert mean["clusters"] == 3 and mean["n"] == 6
    assert mean["stderr"] == pytest.approx(0.1443376, abs=1e-6)
    assert mean["low"] == pytest.approx(0.75 - 4.302653 * 0.1443376, abs=1e-5)
    assert mean["high"] == 1.0
    case_b = evals_by_name(data)["graded[b]"]["points"]  # type: ignore[index]
    assert case_b["possible"] == 4.0 and case_b["earned"] == [2.0, 2.0]
    assert case_b["mean"]["value"] == pytest.approx(0.5)
    out = capsys.readouterr().out
    assert "mean 2/4 points (50%" in out
    assert "mean points 75% of possible (95% CI 13%-100%) over 3 cases, 6 runs" in out


def test_a_suite_gate_on_the_mean_points(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run("graded.py", "--no-store", "--min-mean-points", "0.7") == 0
    assert "suite gate: mean points 0.75 (95% 0.13-1.00) >= 0.7: met" in capsys.readouterr().out
    assert run("graded.py", "--no-store", "--min-mean-points", "0.8") == 1
    assert "suite gate: mean points 0.75 (95% 0.13-1.00) < 0.8: MISSED" in capsys.readouterr().out


def test_a_mean_points_gate_without_a_score_eval_is_missed(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / "plain.py").write_text("from niceeval import define_eval\n\n@define_eval\ndef plain(t):\n    pass\n")
    assert run("plain.py", "--no-store", "--min-mean-points", "0.5") == 1
    assert "mean points: no score eval ran (define_eval(points=N)) (needs >= 0.5): MISSED" in capsys.readouterr().out


def test_a_bad_min_mean_points_is_a_usage_error(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        run("graded.py", "--no-store", "--min-mean-points", "2")
    assert exited.value.code == 2
    assert "--min-mean-points" in capsys.readouterr().err


def test_junit_gives_each_runs_points_and_the_suites_mean(project: Path) -> None:
    run("marks.py", "--no-store", "--junit", "out.xml")
    root = ET.parse(project / "out.xml").getroot()
    cases = {c.get("name"): c for c in root.iter("testcase")}
    props = {p.get("name"): p.get("value") for p in cases["strict_marks"].iter("property")}
    assert (props["points"], props["points_possible"]) == ("2", "3")
    failure = cases["strict_marks"].find("failure")
    assert failure is not None and failure.get("message") == "2/3 points earned"
    passed_out = cases["lenient_marks"].find("system-out")
    assert passed_out is not None and (passed_out.text or "").startswith("2/3 points earned")
    suite = {p.get("name"): p.get("value") for p in root.find("testsuite").iter("property")}  # type: ignore[union-attr]
    assert suite["mean_points"] == f"{(2 / 3 + 2 / 3 + 1) / 3:.6f}"


def test_the_html_report_shows_points_per_eval_and_per_check(project: Path) -> None:
    run("marks.py", "--no-store", "--html", "out.html")
    html = (project / "out.html").read_text()
    assert '<span class="points">2/3 points</span>' in html
    assert '<span class="badge points">1 point not earned</span>' in html


def test_the_store_keeps_points_and_the_viewer_shows_them(project: Path) -> None:
    assert run("marks.py", "--store", "results.db") == 1
    with Store.open(f"sqlite:///{project / 'results.db'}") as store:
        detail = store.run("latest")
        infos = {i.eval_id.split("::")[1]: (i.points, i.points_possible) for i in detail.eval_runs}
        assert infos == {"strict_marks": (2.0, 3.0), "lenient_marks": (2.0, 3.0), "full_marks": (3.0, 3.0)}
        result = store.eval_run("latest", "marks.py::strict_marks")
        assert (result.points, result.points_possible) == (2.0, 3.0)
        assert [a.points for a in result.assertions] == [1.0, 1.0, 1.0]
        app = create_app(ViewerSettings(store=store, access=Access(token=None, loopback=True)))
        browser = TestClient(app, base_url="http://127.0.0.1:7575")
        page = browser.get(f"/runs/{detail.run.id}").text
        assert '<span class="faint points">2/3 points</span>' in page
        one = browser.get(f"/runs/{detail.run.id}/eval", params={"id": "marks.py::strict_marks", "run": 0}).text
        assert '<strong class="points">2/3 points</strong>' in one
        history = browser.get("/evals/history", params={"id": "marks.py::strict_marks"}).text
        assert '<span class="points">2/3 points</span>' in history


def write_eval(project: Path, body: str) -> None:
    (project / "bad.py").write_text(
        "from niceeval import define_eval\nfrom niceeval.expect import includes\n\n" + textwrap.dedent(body)
    )


def test_t_score_in_an_eval_without_points_names_the_line_and_the_fix(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_eval(project, "@define_eval\ndef e(t):\n    t.score(1, 'parses')\n")
    assert run("bad.py", "--no-store") == 2
    out = capsys.readouterr().out
    assert "bad.py:6: 'parses' is worth 1 point(s), but the eval is not a score eval" in out
    assert "@define_eval(points=3)" in out


def test_points_on_a_check_in_an_eval_without_points_is_refused(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_eval(project, "@define_eval\ndef e(t):\n    t.check('a', includes('a').points(2))\n")
    assert run("bad.py", "--no-store") == 2
    assert "bad.py:6: \"includes('a')\" is worth 2 point(s)" in capsys.readouterr().out


def test_earning_more_than_the_eval_is_out_of_names_the_call_that_went_over(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_eval(project, "@define_eval(points=2)\ndef e(t):\n    t.score(1, 'one')\n    t.score(1.5, 'two')\n")
    assert run("bad.py", "--no-store") == 2
    out = capsys.readouterr().out
    assert "bad.py:7: 'two' brings the points earned to 2.5, more than the eval's points=2" in out


def test_an_async_check_that_goes_over_the_points_is_an_error_of_the_eval(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_eval(
        project,
        """\
        from niceeval.expect import satisfies


        async def slow(value):
            return True


        @define_eval(points=1)
        async def e(t):
            t.score(1, 'already full')
            await t.check('a', satisfies(slow, 'is slow').points(1))
        """,
    )
    assert run("bad.py", "--no-store") == 2
    assert "brings the points earned to 2, more than the eval's points=1" in capsys.readouterr().out


@pytest.mark.parametrize("points", [0, -1, True, "3", float("inf")])
def test_points_must_be_a_positive_number(points: object) -> None:
    with pytest.raises(UsageError, match=r"define_eval\(points=...\) is the points the eval is out of"):
        define_eval(points=points)  # type: ignore[call-overload]


def test_points_to_pass_needs_points_and_at_most_them() -> None:
    with pytest.raises(UsageError, match=r"points_to_pass= is a share of the eval's points; give points= too"):
        define_eval(points_to_pass=2)  # type: ignore[call-overload]
    with pytest.raises(UsageError, match=r"points_to_pass=4\) is more than the eval's points=3"):
        define_eval(points=3, points_to_pass=4)


@pytest.mark.parametrize("points", [0, -2, True])
def test_a_check_is_worth_a_positive_number_of_points(points: object) -> None:
    with pytest.raises(UsageError, match=r"includes\('a'\).points\(\) takes the points the check earns"):
        includes("a").points(points)  # type: ignore[arg-type]


@pytest.mark.parametrize(("call", "message"), [("t.score(-1, 'x')", "zero or more"), ("t.score(1, ' ')", "needs what")])
def test_t_score_refuses_negative_points_and_an_empty_label(
    project: Path, capsys: pytest.CaptureFixture[str], call: str, message: str
) -> None:
    write_eval(project, f"@define_eval(points=2)\ndef e(t):\n    {call}\n")
    assert run("bad.py", "--no-store") == 2
    out = capsys.readouterr().out
    assert "t.score() at bad.py:6" in out and message in out


def test_a_required_check_worth_points_still_stops_the_eval(project: Path) -> None:
    write_eval(
        project,
        "@define_eval(points=2, points_to_pass=1)\ndef e(t):\n"
        "    t.require('a', includes('z').points(1))\n    t.score(1, 'never')\n",
    )
    assert run("bad.py", "--no-store", "--json", "out.json") == 1
    (only,) = report(project / "out.json")["evals"]  # type: ignore[misc]
    assert only["runs"][0]["points"] == 0.0 and only["runs"][0]["outcome"] == "failed"


def test_an_inconclusive_check_worth_points_earns_them_unless_inconclusive_fails(
    project: Path,
) -> None:
    write_eval(
        project,
        """\
        from niceeval._core.assertion import Inconclusive
        from niceeval.expect import satisfies


        def undecided(value):
            raise Inconclusive("no_api_key", "no key for the judge")


        @define_eval(points=2)
        def e(t):
            t.score(1, 'answered')
            t.check('a', satisfies(undecided, 'judged').points(1))
        """,
    )
    assert run("bad.py", "--no-store", "--json", "out.json") == 0
    (only,) = report(project / "out.json")["evals"]  # type: ignore[misc]
    assert (only["runs"][0]["points"], only["runs"][0]["outcome"]) == (2.0, "passed")
    assert run("bad.py", "--no-store", "--json", "out.json", "--fail-on-inconclusive") == 1
    (only,) = report(project / "out.json")["evals"]  # type: ignore[misc]
    assert only["runs"][0]["outcome"] == "failed"
