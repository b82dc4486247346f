"""`niceeval run --html` and `niceeval export RUN --html`: the self-contained page, written by the real command."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

import pytest

from ._project import Project, Result, make_project

EVALS = """\
from niceeval import define_eval
from niceeval.expect import includes, similarity


@define_eval
async def passes(t):
    await t.send("hello")
    t.check(t.reply, includes("hello"))


@define_eval
async def scored(t):
    await t.send("hello")
    t.check(t.reply, similarity("echo: goodbye").at_least(0.9))


@define_eval
async def fails(t):
    await t.send("<script>alert(1)</script>")
    t.check(t.reply, includes("goodbye"))
"""


class _Evals(HTMLParser):
    """The eval sections of a report page: (status, eval id) in page order, and whether any script is there."""

    def __init__(self) -> None:
        super().__init__()
        self.sections: list[tuple[str, str]] = []
        self.scripts = 0
        self._status: str | None = None
        self._in_name = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        classes = (dict(attrs).get("class") or "").split()
        self.scripts += tag == "script"
        if tag == "details" and "eval-report" in classes:
            self._status = classes[1]
        self._in_name = tag == "span" and "eval-name" in classes and self._status is not None

    def handle_data(self, data: str) -> None:
        if self._in_name and self._status is not None:
            self.sections.append((self._status, data.split("::")[1]))
            self._in_name = False


def sections(path: Path) -> _Evals:
    found = _Evals()
    found.feed(path.read_text(encoding="utf-8"))
    return found


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> tuple[Project, Result]:
    project = make_project(tmp_path_factory.mktemp("html"))
    project.write("evals/e.py", EVALS)
    return project, project.run("--html", str(project.out / "report.html"))


def test_run_writes_the_html_report_failures_first(ran: tuple[Project, Result]) -> None:
    project, result = ran
    assert result.code == 1, result.output
    page = sections(project.out / "report.html")
    assert page.sections == [("failed", "fails"), ("scored", "scored"), ("passed", "passes")]
    assert page.scripts == 0
    assert result.report()["run_id"] in (project.out / "report.html").read_text(encoding="utf-8")
    assert not (project.out / "report.html.partial").exists()


def test_export_writes_the_same_report_from_the_store(ran: tuple[Project, Result]) -> None:
    project, result = ran
    target = project.out / "exported" / "report.html"
    exported = project.cli("export", result.report()["run_id"], "--html", str(target))
    assert exported.code == 0, exported.output
    assert exported.stdout.strip().endswith(str(target))
    assert sections(target).sections == sections(project.out / "report.html").sections


def test_export_names_the_html_flag_when_no_report_is_asked_for(ran: tuple[Project, Result]) -> None:
    project, _ = ran
    exported = project.cli("export", "latest")
    assert exported.code == 2 and "--html PATH" in exported.stderr
