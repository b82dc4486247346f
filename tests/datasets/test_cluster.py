"""define_eval(cluster=...): which evals the suite's standard errors count as one independent unit."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from niceeval import define_eval
from niceeval._core.errors import UsageError
from niceeval._run.discovery import EvalEntry
from niceeval._run.plan import expand


def _entries(spec: object, tmp_path: Path) -> list[EvalEntry]:
    plan = expand([EvalEntry(id="evals/x.py::e", spec=spec)], root=tmp_path)  # type: ignore[arg-type]
    assert plan.errors == [], plan.errors
    return list(plan.evals)


def test_each_case_is_its_own_cluster_by_default(tmp_path: Path) -> None:
    spec = define_eval(cases=[{"q": 1}, {"q": 2}])(lambda t: None)
    assert [e.cluster for e in _entries(spec, tmp_path)] == ["evals/x.py::e[0]", "evals/x.py::e[1]"]


def test_the_variants_of_one_case_share_its_cluster(tmp_path: Path) -> None:
    spec = define_eval(cases=[{"q": 1}], variants={"p": ["a", "b"]})(lambda t: None)
    assert {e.cluster for e in _entries(spec, tmp_path)} == {"evals/x.py::e[0]"}


def test_a_case_field_groups_cases_from_one_source(tmp_path: Path) -> None:
    rows = [{"q": 1, "doc": "a"}, {"q": 2, "doc": "a"}, {"q": 3, "doc": "b"}]
    spec = define_eval(cases=rows, cluster="doc")(lambda t: None)
    assert [e.cluster for e in _entries(spec, tmp_path)] == ["doc=a", "doc=a", "doc=b"]


def test_without_cases_the_cluster_is_a_label_evals_share(tmp_path: Path) -> None:
    spec = define_eval(cluster="billing")(lambda t: None)
    assert [e.cluster for e in _entries(spec, tmp_path)] == ["cluster:billing"]


def test_a_case_without_the_cluster_field_is_a_load_error_naming_the_case(tmp_path: Path) -> None:
    spec = define_eval(cases=[{"q": 1, "doc": "a"}, {"q": 2}], cluster="doc")(lambda t: None)
    plan = expand([EvalEntry(id="evals/x.py::e", spec=spec)], root=tmp_path)
    assert list(plan.evals) == []
    assert "define_eval(cluster='doc') names a case field" in plan.errors[0].message
    assert "has no 'doc'" in plan.errors[0].message


@pytest.mark.parametrize("value", [3, ""])
def test_cluster_must_be_a_field_name(value: object) -> None:
    with pytest.raises(UsageError, match=r"define_eval\(cluster=\.\.\.\) is a case field's name"):
        define_eval(cluster=value)  # type: ignore[arg-type]


def test_a_run_reports_the_suite_rate_over_clusters(tmp_path: Path) -> None:
    (tmp_path / "evals").mkdir()
    (tmp_path / "evals" / "e.py").write_text(
        "from niceeval import define_eval\n"
        "from niceeval.expect import equals\n"
        "@define_eval(cases=[{'q': i, 'doc': i % 3} for i in range(9)], cluster='doc')\n"
        "def e(t):\n"
        "    t.check(t.case['q'] % 2, equals(1))\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "niceeval.cli", "run", "--no-store"],
        cwd=tmp_path, capture_output=True, text=True, timeout=60,
    )
    assert "pass rate 44% (95% CI 19%-73%; standard error 17% over 3 clusters)" in done.stdout, done.stdout
