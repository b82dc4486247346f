"""Author and configuration mistakes: exit code 2, a message naming file:line and the fix, the rest still runs."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from ._project import Project

GOOD = """\
from niceeval import define_eval
from niceeval.expect import includes


@define_eval
async def still_runs(t):
    await t.send("hi")
    t.check(t.reply, includes("echo: hi"))
"""


@dataclass(frozen=True)
class Mistake:
    module: str
    """The broken eval module's text."""
    marker: str
    """Text on the line the message must point at."""
    hint: str
    """What the message must say (what is wrong or what to do)."""


MODULE_MISTAKES = {
    "syntax_error": Mistake(
        module="""\
from niceeval import define_eval


@define_eval
async def broken(t)
    pass
""",
        marker="async def broken(t)",
        hint="syntax error",
    ),
    "import_error": Mistake(
        module="""\
from niceeval import define_eval
import niceeval_no_such_package_xyz
""",
        marker="import niceeval_no_such_package_xyz",
        hint="(is 'niceeval_no_such_package_xyz' installed? pip install it, or fix the name)",
    ),
    "similarity_of_a_number_at_module_level": Mistake(
        module="""\
from niceeval.expect import similarity

CLOSE_TO_ANSWER = similarity(42)
""",
        marker="similarity(42)",
        hint="similarity() compares text and takes a string, got int 42. To compare other values use equals()",
    ),
    "threshold_above_one_at_module_level": Mistake(
        module="""\
from niceeval.expect import includes

MENTIONS = includes("x").at_least(1.5)
""",
        marker="at_least(1.5)",
        hint="needs a threshold between 0 and 1, got 1.5. Write e.g. .at_least(0.7)",
    ),
    "eval_taking_two_required_arguments": Mistake(
        module="""\
from niceeval import define_eval


@define_eval
async def two_args(t, other):
    pass
""",
        marker="@define_eval",
        hint="eval two_args(t, other) must take exactly one argument, the eval context: write `def two_args(t): ...`",
    ),
    "unknown_define_eval_option": Mistake(
        module="""\
from niceeval import define_eval


@define_eval(tag=["x"])
async def misspelt(t):
    pass
""",
        marker="@define_eval(tag=",
        hint="define_eval() has no option 'tag'; did you mean 'tags'?",
    ),
    "a_misspelt_name_from_niceeval": Mistake(
        module="""\
from niceeval import define_eval
from niceeval.expect import include
""",
        marker="from niceeval.expect import include",
        hint="cannot import name 'include' from 'niceeval.expect'",
    ),
}


def test_a_misspelt_import_from_niceeval_says_which_names_are_close(project: Project) -> None:
    project.write("evals/broken.py", MODULE_MISTAKES["a_misspelt_name_from_niceeval"].module)
    result = project.run()
    assert result.code == 2
    assert "(did you mean 'includes'" in result.stdout
    assert "installed" not in result.stdout


def test_an_eval_file_named_like_a_package_is_told_to_rename(project: Project) -> None:
    project.write("evals/yaml.py", "from niceeval import define_eval\nfrom yaml import safe_load\n")
    result = project.run()
    assert result.code == 2
    assert (
        "(yaml.py in the eval's folder is imported instead of the package 'yaml': an eval file's folder comes first "
        "on sys.path. Rename yaml.py" in result.stdout
    )
    assert "installed" not in result.stdout


def test_one_wrong_define_eval_does_not_hide_the_other_evals_of_its_file(project: Project) -> None:
    project.write("evals/mixed.py", f"{GOOD}\n\n@define_eval\nasync def two_args(t, other):\n    pass\n")
    project.write(
        "evals/more.py", "from niceeval import define_eval\n\n\n@define_eval(timout=3)\nasync def typo(t):\n    pass\n"
    )
    result = project.run()
    assert result.code == 2
    assert "PASS   evals/mixed.py::still_runs" in result.stdout
    where = project.line_of("evals/mixed.py", "async def two_args") - 1
    assert f" ERROR  evals/mixed.py:{where}: eval two_args(t, other) must take exactly one argument" in result.stdout
    assert " ERROR  evals/more.py:4: define_eval() has no option 'timout'; did you mean 'timeout'?" in result.stdout
    assert sorted(e["location"] for e in result.report()["errors"]) == [
        "evals/mixed.py:" + str(where),
        "evals/more.py:4",
    ]


@pytest.mark.parametrize("mistake", MODULE_MISTAKES.values(), ids=MODULE_MISTAKES.keys())
def test_a_broken_module_exits_2_naming_its_line_and_the_others_still_run(project: Project, mistake: Mistake) -> None:
    project.write("evals/a_good.py", GOOD)
    project.write("evals/broken.py", mistake.module)
    project.write("evals/z_good.py", GOOD.replace("still_runs", "also_runs"))
    where = f"evals/broken.py:{project.line_of('evals/broken.py', mistake.marker)}"

    result = project.run()

    assert result.code == 2, result.output
    assert f" ERROR  {where}: " in result.stdout
    assert mistake.hint in result.stdout
    assert "PASS   evals/a_good.py::still_runs" in result.stdout
    assert "PASS   evals/z_good.py::also_runs" in result.stdout
    report = result.report()
    assert report["exit_code"] == 2
    assert [e["location"] for e in report["errors"]] == [where]
    assert mistake.hint in report["errors"][0]["message"]
    assert report["summary"]["passed"] == 2
    load_errors = [c for c in result.junit().iter("testcase") if c.get("classname") == "niceeval.load"]
    assert [c.get("name") for c in load_errors] == [where]
    assert load_errors[0].find("error") is not None


EVAL_MISTAKES = {
    "similarity_of_a_number": Mistake(
        module="""\
from niceeval import define_eval
from niceeval.expect import similarity


@define_eval
async def bad(t):
    await t.send("hi")
    t.check(t.reply, similarity(42))
""",
        marker="similarity(42)",
        hint="similarity() compares text and takes a string, got int 42. To compare other values use equals()",
    ),
    "threshold_above_one": Mistake(
        module="""\
from niceeval import define_eval
from niceeval.expect import includes


@define_eval
async def bad(t):
    await t.send("hi")
    t.check(t.reply, includes("hi").at_least(1.5))
""",
        marker="at_least(1.5)",
        hint="needs a threshold between 0 and 1, got 1.5. Write e.g. .at_least(0.7)",
    ),
    "check_without_a_matcher": Mistake(
        module="""\
from niceeval import define_eval


@define_eval
async def bad(t):
    await t.send("hi")
    t.check(t.reply == "echo: hi")
""",
        marker="t.check(",
        hint="was given no matcher. Pass one from niceeval.expect, e.g. t.check(t.reply, includes('refund'))",
    ),
    "check_without_a_matcher_in_a_sync_eval": Mistake(
        module="""\
from niceeval import define_eval


@define_eval
def bad(t):
    t.send("hi")
    t.check(t.reply)
""",
        marker="t.check(",
        hint="was given no matcher",
    ),
    "send_without_a_string": Mistake(
        module="""\
from niceeval import define_eval


@define_eval
async def bad(t):
    await t.send(42)
""",
        marker="t.send(",
        hint="takes the message as a string or a list of chat messages, got 42",
    ),
}


@pytest.mark.parametrize("mistake", EVAL_MISTAKES.values(), ids=EVAL_MISTAKES.keys())
def test_an_api_misuse_inside_an_eval_exits_2_naming_its_line_and_the_others_still_run(
    project: Project, mistake: Mistake
) -> None:
    project.write("evals/a_good.py", GOOD)
    project.write("evals/broken.py", mistake.module)
    where = f"evals/broken.py:{project.line_of('evals/broken.py', mistake.marker)}"

    result = project.run()

    assert result.code == 2, result.output
    assert f" ERROR  {where}: " in result.stdout
    assert mistake.hint in result.stdout
    assert "PASS   evals/a_good.py::still_runs" in result.stdout
    run = result.eval("bad")["runs"][0]
    assert run["outcome"] == "failed"
    assert run["error"]["type"] == "UsageError"
    assert run["error"]["kind"] == "usage"
    assert run["error"]["location"] == where
    assert [e["location"] for e in result.report()["errors"]] == [where]


def test_an_api_misuse_repeated_by_runs_is_reported_once(project: Project) -> None:
    project.write("evals/broken.py", EVAL_MISTAKES["check_without_a_matcher"].module)
    result = project.run("--runs", "3")
    assert result.code == 2, result.output
    assert result.stdout.count(" ERROR  ") == 1
    assert len(result.report()["errors"]) == 1


def test_an_unknown_flag_exits_2_naming_it(project: Project) -> None:
    result = project.cli("run", "--colour")
    assert result.code == 2
    assert "unrecognized arguments: --colour" in result.stderr
    assert "usage: niceeval" in result.stderr


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--runs", "0", "--runs 0: the number of runs must be at least 1"),
        ("--runs", "two", "--runs 'two': write a number of runs (3), `auto`, or bounds like 3..20"),
        ("--concurrency", "0", "--concurrency must be at least 1, got 0"),
        ("--timeout", "-1", "--timeout must be positive, got -1"),
        ("--min-pass-rate", "1.5", "--min-pass-rate must be between 0 and 1, got 1.5"),
    ],
)
def test_an_out_of_range_option_exits_2_saying_what_it_takes(
    project: Project, flag: str, value: str, message: str
) -> None:
    project.write("evals/ok.py", GOOD)
    result = project.cli("run", f"{flag}={value}")
    assert result.code == 2
    assert message in result.stderr


def test_a_config_that_raises_exits_2_naming_its_line(project: Project) -> None:
    project.write("evals/ok.py", GOOD)
    project.write(
        "niceeval.config.py",
        """\
        import os

        from niceeval import define_config

        config = define_config(concurrency=int(os.environ["NICEEVAL_TEST_UNSET_VARIABLE"]))
        """,
    )
    result = project.run()
    assert result.code == 2
    line = project.line_of("niceeval.config.py", "define_config(")
    assert f"niceeval.config.py:{line}" in result.stderr
    assert "raised KeyError: 'NICEEVAL_TEST_UNSET_VARIABLE'. Fix the config file." in result.stderr
    assert result.json_text is None


def test_a_config_with_an_unknown_key_exits_2_naming_the_key_and_the_fix(project: Project) -> None:
    project.write("evals/ok.py", GOOD)
    project.write(
        "niceeval.config.py",
        """\
        from niceeval import define_config

        config = define_config(
            concurency=4,
        )
        """,
    )
    result = project.run()
    assert result.code == 2
    line = project.line_of("niceeval.config.py", "define_config(")
    assert f"niceeval.config.py:{line}: define_config(): unknown key 'concurency'" in result.stderr
    assert "did you mean 'concurrency'?" in result.stderr


def test_a_config_key_unlike_any_known_one_lists_the_known_keys(project: Project) -> None:
    project.write("evals/ok.py", GOOD)
    project.write("niceeval.config.py", "from niceeval import define_config\nconfig = define_config(colour=1)\n")
    result = project.run()
    assert result.code == 2
    assert "unknown key 'colour'; remove it or check its spelling (known keys: evals, concurrency," in result.stderr
    assert "root" not in result.stderr


def test_a_config_with_a_wrong_value_exits_2_naming_the_key(project: Project) -> None:
    project.write("evals/ok.py", GOOD)
    project.write("niceeval.config.py", 'from niceeval import define_config\nconfig = define_config(timeout="soon")\n')
    result = project.run()
    assert result.code == 2
    assert "niceeval.config.py:2: define_config(): timeout:" in result.stderr
    assert "(got 'soon')" in result.stderr


def test_a_config_file_without_a_config_exits_2_saying_what_to_write(project: Project) -> None:
    project.write("evals/ok.py", GOOD)
    project.write("niceeval.config.py", "CONCURRENCY = 4\n")
    result = project.run()
    assert result.code == 2
    assert "write `config = define_config(...)` in it" in result.stderr


def test_send_without_an_agent_exits_2_saying_where_to_set_one(project: Project) -> None:
    project.write("niceeval.config.py", "from niceeval import define_config\nconfig = define_config()\n")
    project.write("evals/ok.py", GOOD)
    result = project.run()
    assert result.code == 2, result.output
    assert "t.send() needs an agent: set `agent=` in niceeval.config.py" in result.stdout
    line = project.line_of("evals/ok.py", "t.send(")
    assert result.eval("still_runs")["runs"][0]["error"]["location"] == f"evals/ok.py:{line}"
