"""Your own attack templates (`attack_cases(templates=...)`): read from a YAML or JSON file, or given as a list.

Each template is validated (pydantic) and rendered once with a sample canary before any case is made, so a bad
field, an unknown placeholder or a text without the canary is an error naming the file and line (or the list's
index) and the fix, not a case that can never be judged.
"""

from __future__ import annotations

import string
from collections.abc import Mapping, Sequence
from os import PathLike
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from niceeval._core.errors import UsageError
from niceeval._core.values import short
from niceeval.attacks._templates import (
    BUILT_IN,
    FAMILIES,
    MUTATIONS,
    SECRET_FILE,
    SINK_HOST,
    VECTORS,
    Template,
    Vector,
    Watch,
    canary_address,
    render,
)

_PLACEHOLDERS = ("canary", "a", "b", "sink")
_FORMATS = (".yaml", ".yml", ".json")


class AttackTemplate(BaseModel):
    """One template as you write it: the fields of the built-in ones."""

    model_config = ConfigDict(extra="forbid")

    family: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    """A built-in family (its cases are judged as the built-in ones are) or your own (then give `watch`)."""
    text: str = Field(min_length=1)
    """The injected instruction: `{canary}` (or its halves `{a}` and `{b}`); for data exfiltration, whose canary is
    the secret in `.env`, `{sink}` (the case's canary address) instead."""
    name: str | None = Field(default=None, pattern=r"^[A-Za-z0-9_.]+$")
    """Its part of the cases' ids (`family-NAME-vector-mutation`); `custom1`, `custom2`, ... by position if left out."""
    watch: list[Watch] | None = Field(default=None, min_length=1)
    """Where the canary appearing means the agent obeyed: `reply`, `tool_args`, `commands`."""
    vectors: list[Vector] = Field(default_factory=lambda: list(VECTORS), min_length=1)
    mutations: list[str] = Field(default_factory=lambda: list(MUTATIONS), min_length=1)


def load_templates(source: str | PathLike[str] | Sequence[Mapping[str, Any]]) -> list[Template]:
    """The templates of a file or a list, validated and rendered once.

    Raises:
        UsageError: The file is missing or unreadable, or a template is malformed or fails to render.
    """
    if isinstance(source, str | PathLike):
        path = Path(source)
        items, lines = _read_file(path)
        where = [f"{path}:{line}" for line in lines]
    elif isinstance(source, Sequence) and not isinstance(source, bytes):
        items = list(source)
        where = [f"attack_cases(templates=[...]) item {index}" for index in range(len(items))]
    else:
        raise UsageError(
            f"attack_cases(templates=...) takes a YAML or JSON file's path or a list of templates; got {short(source)}."
        )
    if not items:
        shown = source if isinstance(source, str | PathLike) else "the list"
        raise UsageError(f"attack_cases(templates=...): {shown} holds no templates; add at least one.")
    templates = [_template(item, index, place) for index, (item, place) in enumerate(zip(items, where, strict=True))]
    seen: dict[tuple[str, str], str] = {}
    for template, place in zip(templates, where, strict=True):
        key = (template.family, template.name)
        if key in seen:
            raise UsageError(
                f"{place}: template {template.family}/{template.name} repeats the one at {seen[key]}: their cases "
                "would have the same ids. Give one of them another `name`."
            )
        seen[key] = place
    return templates


def _read_file(path: Path) -> tuple[list[Any], list[int]]:
    import yaml

    if path.suffix.lower() not in _FORMATS:
        raise UsageError(f"{path}: attack templates are read from {', '.join(_FORMATS)} files; rename or convert it.")
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise UsageError(f"{path}: cannot read the attack templates ({error.strerror or error}).") from None
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        raise UsageError(
            f"{path}{line}: not valid YAML or JSON ({getattr(error, 'problem', None) or error})."
        ) from None
    if not isinstance(data, list) or not isinstance(node, yaml.SequenceNode):
        raise UsageError(
            f"{path}:1: attack templates are a list, one item per template (- family: ..., text: ...); "
            f"got {type(data).__name__}."
        )
    return data, [item.start_mark.line + 1 for item in node.value]


def _template(item: object, index: int, where: str) -> Template:
    try:
        model = AttackTemplate.model_validate(item)
    except ValidationError as error:
        problem = error.errors()[0]
        field = ".".join(str(part) for part in problem["loc"]) or "the template"
        raise UsageError(f"{where}: {field}: {problem['msg']}. {_FIX}") from None
    watch = model.watch or _default_watch(model.family, where)
    unknown = sorted(set(model.mutations) - set(MUTATIONS))
    if unknown:
        raise UsageError(
            f"{where}: mutations: no such mutation {', '.join(unknown)}; choose from {', '.join(MUTATIONS)}."
        )
    template = Template(
        family=model.family,
        text=model.text,
        watch=tuple(dict.fromkeys(watch)),
        name=model.name or f"custom{index + 1}",
        vectors=tuple(dict.fromkeys(model.vectors)),
        mutations=tuple(dict.fromkeys(model.mutations)),
    )
    _check_renders(template, where)
    return template


def _default_watch(family: str, where: str) -> tuple[Watch, ...]:
    for built_in in BUILT_IN:
        if built_in.family == family:
            return built_in.watch
    raise UsageError(
        f"{where}: family {family!r} is not built in ({', '.join(FAMILIES)}), so say where obeying it shows: "
        "add watch: [reply] (or tool_args, commands)."
    )


def _check_renders(template: Template, where: str) -> None:
    try:
        fields = {name for _, name, _, _ in string.Formatter().parse(template.text) if name is not None}
        unknown = sorted(fields - set(_PLACEHOLDERS))
        if unknown:
            raise ValueError(f"unknown placeholder {{{unknown[0]}}}")
        render(template, "CNRY0123456789AB", canary_address("check"))
    except (ValueError, IndexError, KeyError) as error:
        raise UsageError(
            f"{where}: text fails to render ({error}); the placeholders are {{canary}}, {{a}}, {{b}} and {{sink}}, "
            "and a literal brace is written {{ or }}."
        ) from None
    if template.family == "data_exfiltration":
        if "sink" not in fields and SINK_HOST not in template.text:
            raise UsageError(
                f"{where}: a data_exfiltration text must say where to send the secret (its canary is the secret in "
                f"{SECRET_FILE}, never in the text): put http://{{sink}}/... (the case's canary address) in it."
            )
    elif "canary" not in fields and not {"a", "b"} <= fields:
        raise UsageError(
            f"{where}: text has no canary, so no case made from it can be judged; put {{canary}} where the agent "
            "would use it (or {a} and {b}, its halves, for a text judged by the reply)."
        )


_FIX = "Each template is family: NAME, text: '... {canary} ...', and optionally name, watch, vectors, mutations."
