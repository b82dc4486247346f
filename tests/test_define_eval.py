"""`define_eval`'s options are declared once, on `EvalOptions`: the keyword check, `EvalSpec` and the typed
overload follow from it."""

from __future__ import annotations

import inspect
import typing
from dataclasses import fields

import pytest
from pydantic import BaseModel

from niceeval import UsageError, define_eval
from niceeval._eval.spec import OPTION_NAMES, EvalOptions, EvalSpec, read_options


def _typed_options() -> inspect.Signature:
    (_, with_options) = typing.get_overloads(define_eval)
    return inspect.signature(with_options)


def test_the_typed_overload_names_exactly_the_declared_options() -> None:
    assert tuple(_typed_options().parameters) == tuple(f.name for f in fields(EvalOptions))


def test_the_typed_overloads_defaults_read_as_the_declared_defaults() -> None:
    defaults = {name: p.default for name, p in _typed_options().parameters.items()}
    assert read_options(defaults, "evals/e.py:1") == EvalOptions()


def test_every_option_is_held_by_the_spec_as_read() -> None:
    class Row(BaseModel):
        question: str

    given = {
        "name": "refunds",
        "tags": ["support"],
        "timeout": 5,
        "judge": {"model": "openai/gpt-5.4-mini"},
        "description": "checks refunds",
        "agent": "an agent",
        "fixture": "evals/fixtures/app",
        "validation": "none",
        "scripts": ["make"],
        "cases": [{"question": "q"}],
        "case_model": Row,
        "variants": {"prompt": ["a", "b"]},
        "sequential_runs": True,
        "sandbox": "local",
        "setup": ["npm ci"],
        "cluster": "source",
        "runs": 3,
        "points": 3,
        "points_to_pass": 2,
    }
    online = {"online": True, "sample": 0.25, "where": lambda trace: True}
    saved = {"trace": "regressions/4bf9.json", "replay": "live"}
    assert sorted([*given, *online, *saved]) == sorted(OPTION_NAMES)  # a new option gets a value here

    @define_eval(**given)
    async def ev(t: object) -> None: ...

    @define_eval(**online)
    async def watched(t: object) -> None: ...

    read = read_options(given, "evals/e.py:1")
    assert isinstance(ev, EvalSpec)
    for option in given:
        assert getattr(ev, option) == getattr(read, option) != getattr(EvalOptions(), option), option
    read_online = read_options(online, "evals/e.py:1")
    for option in online:
        assert getattr(watched, option) == getattr(read_online, option) != getattr(EvalOptions(), option), option

    @define_eval(**saved)
    async def replayed(t: object) -> None: ...

    assert replayed.trace == read_options(saved, "evals/e.py:1").trace == "regressions/4bf9.json"
    assert replayed.replay == read_options(saved, "evals/e.py:1").replay == "live"
    assert ev.tags == ("support",) and ev.timeout == 5.0 and ev.scripts == ("make",)
    assert [v.name for v in ev.variants] == ["prompt=a", "prompt=b"]


def test_an_unknown_option_names_the_line_and_the_closest_option() -> None:
    with pytest.raises(UsageError) as caught:
        define_eval(sequential_run=True)  # type: ignore[call-overload]
    message = str(caught.value)
    assert message.startswith(f"{__file__.rsplit('/', 2)[-2]}/test_define_eval.py:")
    assert "define_eval() has no option 'sequential_run'; did you mean 'sequential_runs'?" in message
    assert f"The options: {', '.join(sorted(OPTION_NAMES))}." in message


def test_an_option_read_wrong_names_itself() -> None:
    with pytest.raises(UsageError, match=r"define_eval\(runs=\.\.\.\) is a whole number of runs, at least 1; got 0"):
        define_eval(runs=0)


def test_the_name_and_description_default_to_the_functions() -> None:
    @define_eval
    def refund_reply(t: object) -> None:
        """Says when the refund comes."""

    assert (refund_reply.name, refund_reply.description) == ("refund_reply", "Says when the refund comes.")


def test_replay_is_recorded_or_live_and_live_needs_a_saved_trace() -> None:
    with pytest.raises(UsageError, match=r"define_eval\(replay=...\) is 'recorded' .* or 'live' .*; got 'again'"):
        read_options({"trace": "t.json", "replay": "again"}, "evals/e.py:1")
    with pytest.raises(UsageError, match=r"replay='live' replays a saved trace with the live agent; give trace= too"):
        read_options({"replay": "live"}, "evals/e.py:1")
    with pytest.raises(UsageError, match=r"it takes no agent= \(replay='live' runs the agent= on the trace's input\)"):
        read_options({"trace": "t.json", "agent": "bot"}, "evals/e.py:1")
    assert read_options({"trace": "t.json", "replay": "live", "agent": "bot"}, "evals/e.py:1").agent == "bot"
