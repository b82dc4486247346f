"""A dataset run with no code: `niceeval run data/cases.yaml` sends each case's `input` to the config's agent and
applies its `assert:` entries (`t.check_case()`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from niceeval._core.errors import UsageError
from niceeval._eval.cases import FORMATS
from niceeval._eval.spec import EvalSpec

NAME = "dataset"
"""The eval's name in ids: `data/cases.yaml::dataset[case_id]`."""


def is_dataset(path: Path) -> bool:
    """Whether `path` names a dataset file rather than an eval module."""
    return path.is_file() and path.suffix.lower() in FORMATS


def case_input(case: Any, source: str | None) -> str:
    """What a case sends to the agent: its `input` field (text; other values are sent as JSON)."""
    value = case.get("input") if isinstance(case, dict) else getattr(case, "input", None)
    if value is None or value == "":
        raise UsageError(
            f"{source}: a case run without an eval module needs an `input:` field (what is sent to the agent); "
            "add one, or write an eval module that sends what it needs and calls t.check_case()."
        )
    if isinstance(value, str):
        return value
    import json

    return json.dumps(value, ensure_ascii=False, default=str)


async def _run_case(t: Any) -> None:
    await t.send(case_input(t.case, t._case_source))
    t.check_case()


def dataset_eval(path: Path) -> EvalSpec:
    """The eval that runs the dataset at `path` with the config's agent."""
    return EvalSpec(
        fn=_run_case,
        name=NAME,
        file=path.resolve(),
        line=1,
        description=f"the cases of {path.name}, sent to the config's agent and checked by their `assert:` entries",
        is_async=True,
        cases=str(path.resolve()),
    )
