"""`define_experiment`, loading `experiments/*.py`, choosing an experiment's evals, and `t.flags`."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from niceeval import ConfigError, EvalRef, UsageError, define_eval, define_experiment
from niceeval._eval.experiment import Flags
from niceeval._run.discovery import EvalEntry
from niceeval._run.experiments import ExperimentRun, agent_identity, load_experiments


def _write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))


def test_an_experiment_keeps_what_it_was_given_and_where() -> None:
    experiment = define_experiment(model="openai/gpt-5-mini", flags={"prompt": "short"}, runs=3, judge="openai/j")
    assert (experiment.model, dict(experiment.flags), experiment.runs) == ("openai/gpt-5-mini", {"prompt": "short"}, 3)
    assert experiment.judge is not None and experiment.judge.model == "openai/j"
    assert experiment.file.endswith("test_define_experiment.py") and experiment.line > 0


@pytest.mark.parametrize(
    ("settings", "said"),
    [
        ({"modle": "openai/x"}, "unknown key 'modle'"),
        ({"runs": 0}, "define_experiment(runs=...) must be positive, got 0"),
        ({"runs": 2.5}, "define_experiment(runs=...) takes a int, got 2.5"),
        ({"budget": "lots"}, "define_experiment(budget=...) takes a float"),
        ({"model": "gpt-5"}, "define_experiment(model=...) is `provider/model`"),
        ({"flags": ["a"]}, "define_experiment(flags=...) takes a dict of names"),
        ({"labels": {"team": 3}}, "define_experiment(labels=...) takes a dict of words"),
        ({"evals": "evals/a.py"}, "define_experiment(evals=...) takes a list of paths, globs and `tag:NAME`"),
        ({"setup": "make db"}, "define_experiment(setup=...) takes a function"),
        ({"judge": {"modle": "x"}}, "unknown key 'modle'"),
        ({"sandbox": "vm"}, "sandbox is one of"),
    ],
)
def test_a_wrong_setting_names_this_file_and_line_and_the_fix(settings: dict[str, object], said: str) -> None:
    with pytest.raises(ConfigError) as raised:
        define_experiment(**settings)
    assert said in str(raised.value)
    assert str(raised.value).startswith("tests/experiments/test_define_experiment.py:")


def test_experiments_load_one_per_file_with_the_stem_as_id(tmp_path: Path) -> None:
    _write(tmp_path, "experiments/gpt.py", "from niceeval import define_experiment\nexperiment = define_experiment()\n")
    _write(tmp_path, "experiments/_helpers.py", "raise RuntimeError('not an experiment')\n")
    _write(tmp_path, "experiments/nested/claude.py", "from niceeval import define_experiment as d\nx = d(runs=2)\n")
    found = load_experiments(tmp_path)
    assert [(e.id, e.runs) for e in found] == [("gpt", None), ("claude", 2)]


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("x = 1\n", "experiments/a.py defines no experiment; write one `experiment = define_experiment(...)`"),
        ("from niceeval import define_experiment as d\na = d()\nb = d()\n", "experiments/a.py defines 2 experiments"),
        ("import nothing_here\n", "experiments/a.py:1: experiments/a.py raised ModuleNotFoundError"),
        ("def broken(:\n", "experiments/a.py:1: syntax error"),
    ],
)
def test_a_wrong_experiment_file_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, said: str
) -> None:
    monkeypatch.chdir(tmp_path)
    _write(tmp_path, "experiments/a.py", text)
    with pytest.raises(ConfigError) as raised:
        load_experiments(tmp_path)
    assert said in str(raised.value)


def test_a_missing_experiments_folder_says_how_to_write_one(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"no experiment file or folder at .*experiments: write one"):
        load_experiments(tmp_path)


def _entry(name: str, tags: tuple[str, ...] = ()) -> EvalEntry:
    async def fn(t: object) -> None:
        return None

    fn.__name__ = name
    spec = define_eval(tags=list(tags))(fn)
    return EvalEntry(id=f"evals/a.py::{name}", spec=spec)


def test_evals_are_chosen_by_tag_or_by_a_predicate() -> None:
    entries = [_entry("smoke_one", ("smoke",)), _entry("slow_one", ("slow",)), _entry("plain")]
    by_tag = ExperimentRun(experiment=define_experiment(evals=["tag:smoke", "tag:slow"]))
    assert [e.id for e in by_tag.select(entries)] == ["evals/a.py::smoke_one", "evals/a.py::slow_one"]
    seen: list[EvalRef] = []
    by_predicate = ExperimentRun(experiment=define_experiment(evals=lambda e: seen.append(e) or "slow" not in e.tags))
    assert [e.id for e in by_predicate.select(entries)] == ["evals/a.py::smoke_one", "evals/a.py::plain"]
    assert seen[0] == EvalRef(id="evals/a.py::smoke_one", file=entries[0].file, tags=("smoke",))


def test_a_predicate_that_raises_names_the_experiment_and_the_eval() -> None:
    run = ExperimentRun(experiment=define_experiment(evals=lambda e: 1 / 0))
    with pytest.raises(ConfigError, match=r"the evals= predicate raised ZeroDivisionError: .* on eval evals/a.py::x"):
        run.select([_entry("x")])


def test_paths_and_globs_become_discovery_targets(tmp_path: Path) -> None:
    _write(tmp_path, "evals/support/refund_a.py", "")
    _write(tmp_path, "evals/support/refund_b.py", "")
    _write(tmp_path, "evals/other.py", "")
    run = ExperimentRun(experiment=define_experiment(evals=["evals/other.py", "evals/**/refund_*.py", "tag:x"]))
    assert run.targets(tmp_path, ["evals"]) == [
        "evals/other.py",
        "evals/support/refund_a.py",
        "evals/support/refund_b.py",
    ]
    assert ExperimentRun(experiment=define_experiment(evals=["tag:x"])).targets(tmp_path, ["evals"]) == ["evals"]
    nothing = ExperimentRun(experiment=define_experiment(evals=["evals/**/nothing_*.py"]))
    with pytest.raises(ConfigError, match=r"evals='evals/\*\*/nothing_\*.py' matches no file"):
        nothing.targets(tmp_path, ["evals"])


def test_a_flag_the_experiment_does_not_set_names_the_flag_the_eval_and_who_sets_flags() -> None:
    flags = Flags({"tone": "warm"}, eval_id="evals/a.py::x", experiment="gpt", known=(("gpt", ("tone",)), ("b", ())))
    assert (
        flags["tone"] == "warm"
        and flags.get("skill") is None
        and "skill" not in flags
        and dict(flags) == {"tone": "warm"}
    )
    with pytest.raises(UsageError) as raised:
        flags["skill"]
    assert str(raised.value) == (
        "eval evals/a.py::x reads t.flags['skill'], but experiment 'gpt' does not set it; experiments that set "
        "flags: gpt (tone). Set it in the experiment's define_experiment(flags={'skill': ...}), or read it with "
        "t.flags.get('skill', default)."
    )
    outside = Flags({}, eval_id="evals/a.py::x", experiment=None)
    with pytest.raises(UsageError, match="this run is not an experiment's .* no experiment sets any flag"):
        outside["skill"]


def test_an_agents_identity_follows_its_prompt_and_its_code_not_its_object() -> None:
    from niceeval.agents import openai_agent

    short, long = openai_agent("openai/a", system="Be short."), openai_agent("openai/a", system="Be long.")
    assert agent_identity(short, has_model=True) == agent_identity(openai_agent("openai/b", system="Be short."),
                                                                   has_model=True)  # fmt: skip
    assert agent_identity(short, has_model=True) != agent_identity(long, has_model=True)
    assert agent_identity(short, has_model=False) != agent_identity(openai_agent("openai/b", system="Be short."),
                                                                    has_model=False)  # fmt: skip

    def echo(message: str) -> str:
        return message

    identity = agent_identity(echo, has_model=False)
    assert identity.startswith(f"{__name__}.{echo.__qualname__}:") and len(identity.rsplit(":", 1)[1]) == 32
