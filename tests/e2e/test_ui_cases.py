"""Cases written in the viewer, through the real command: `niceeval run` runs them as `ui::NAME`, `list` lists
them, and `niceeval cases export` writes them as code that runs the same way."""

from __future__ import annotations

from niceeval.store import Store
from niceeval.store.cases import CaseBook, CaseRound, UiCase

from ._project import Project

TOOL_AGENT = """\
from niceeval import define_config
from niceeval.agents import FunctionSession


def shop(message: str, session: FunctionSession) -> str:
    if "refund" in message:
        session.tool("lookup_order", {"order_id": "1234"}, output="shipped")
    return "echo: " + message


config = define_config(agent=shop)
"""


def add_cases(project: Project, *cases: UiCase) -> None:
    with Store.open(".niceeval/results.db", root=project.root) as store:
        for case in cases:
            CaseBook(store).create(case)


def refund_case(**fields: object) -> UiCase:
    return UiCase(name="refund", rounds=[CaseRound(prompt="I want a refund")], expected_tools=["lookup_order"],
                  **fields)  # type: ignore[arg-type]  # fmt: skip


def test_run_runs_the_stores_cases_beside_the_code_evals(project: Project) -> None:
    project.write("niceeval.config.py", TOOL_AGENT)
    project.write("evals/code.py", "from niceeval import define_eval\n\n@define_eval\ndef code(t):\n    t.send('x')\n")
    add_cases(project, refund_case(tags=["billing"]))
    result = project.run()
    assert result.code == 0, result.output
    assert {e["id"] for e in result.report()["evals"]} == {"evals/code.py::code", "ui::refund"}
    assertions = result.eval("refund")["runs"][0]["assertions"]
    assert [a["name"] for a in assertions] == ["called_tool('lookup_order')"] and assertions[0]["state"] == "passed"


def test_a_missed_expected_tool_fails_the_case(project: Project) -> None:
    add_cases(project, refund_case())  # the echo agent calls no tool
    result = project.run("ui::refund")
    assert result.code == 1 and result.eval("refund")["runs"][0]["outcome"] == "failed"


def test_run_picks_cases_by_name_and_tag(project: Project) -> None:
    project.write("evals/code.py", "from niceeval import define_eval\n\n@define_eval\ndef code(t):\n    t.send('x')\n")
    add_cases(project, refund_case(tags=["billing"]), UiCase(name="hello", rounds=[CaseRound(prompt="hi")]))
    only = project.run("ui::hello")
    assert [e["id"] for e in only.report()["evals"]] == ["ui::hello"]
    tagged = project.run("--tag", "billing", "--no-store")
    assert [e["id"] for e in tagged.report()["evals"]] == ["ui::refund"]


def test_an_unknown_case_is_a_load_problem_naming_it(project: Project) -> None:
    add_cases(project, refund_case())
    result = project.run("ui::nope")
    assert result.code == 2 and "ui::nope" in result.output and "no case of that name" in result.output


def test_revival_closes_the_session_after_round_1(project: Project) -> None:
    rounds = [CaseRound(prompt="first"), CaseRound(prompt="second")]
    add_cases(project, UiCase(name="revived", rounds=rounds, revival=True))
    result = project.run("ui::revived")
    assert result.code == 0, result.output
    sent = [e["text"] for e in result.eval("revived")["runs"][0]["events"] if e["type"] == "message"]
    assert sent == ["first", "echo: first", "second", "echo: second"]


def test_list_shows_the_cases(project: Project) -> None:
    add_cases(project, refund_case(tags=["billing"]))
    listed = project.cli("list")
    assert "ui::refund  [ui, billing]" in listed.stdout


def test_export_writes_cases_as_code_that_runs_the_same(project: Project) -> None:
    project.write("niceeval.config.py", TOOL_AGENT)
    add_cases(project, refund_case(description="A refund request."))
    exported = project.cli("cases", "export")
    assert exported.code == 0 and "wrote 1 case to evals/ui_cases.py: refund" in exported.stdout
    code = (project.root / "evals" / "ui_cases.py").read_text()
    assert "async def ui_refund(t: EvalContext)" in code and "t.called_tool('lookup_order')" in code
    from_code = project.run("evals/ui_cases.py")
    assert from_code.code == 0, from_code.output
    assert [e["id"] for e in from_code.report()["evals"]] == ["evals/ui_cases.py::refund"]


def test_export_never_overwrites_other_code_without_force(project: Project) -> None:
    add_cases(project, refund_case())
    project.write("evals/ui_cases.py", "# my own evals\n")
    refused = project.cli("cases", "export")
    assert refused.code == 2 and "--force" in refused.stderr
    assert (project.root / "evals" / "ui_cases.py").read_text() == "# my own evals\n"
    assert project.cli("cases", "export", "--force").code == 0


def test_export_with_no_cases_says_where_to_write_them(project: Project) -> None:
    add_cases(project)
    done = project.cli("cases", "export")
    assert done.code == 0 and "niceeval view" in done.stdout
    assert not (project.root / "evals" / "ui_cases.py").exists()
