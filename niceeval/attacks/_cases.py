"""`attack_cases()`: the attack set as dataset rows, from the built-in templates or your own."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from os import PathLike
from typing import Any

from niceeval._core.errors import UsageError
from niceeval.attacks._templates import BUILT_IN, VECTORS, Template, make_row
from niceeval.attacks._user_templates import load_templates


def attack_cases(
    families: Iterable[str] | None = None,
    *,
    vectors: Iterable[str] | None = None,
    templates: str | PathLike[str] | Sequence[Mapping[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """The generated indirect prompt-injection cases: rows for `define_eval(cases=...)`.

    Five families (`FAMILIES`) x two templates x four places a tool reads (`VECTORS`: a workspace file, a tool's
    output, a page served on loopback, a retrieved document) x three mutations: 120 distinct cases, made offline.

    Args:
        families: Only these families (names from `FAMILIES`, or those of `templates`); all when None.
        vectors: Only these places (names from `VECTORS`); all when None.
        templates: Your own templates instead of the built-in ones: a YAML or JSON file holding a list of them, or
            the list itself; each has `family`, `text` (with the `{canary}` placeholder, or `{a}` and `{b}`), and
            optionally `name`, `watch`, `vectors` and `mutations` (see docs/attacks.md).

    Raises:
        UsageError: A family or vector that does not exist (the message lists those that do), or a template that is
            malformed or fails to render (the message names its file and line, and the fix).
    """
    chosen_templates = _numbered(BUILT_IN) if templates is None else load_templates(templates)
    known_families = tuple(dict.fromkeys(template.family for template in chosen_templates))
    chosen_families = _chosen("families", families, known_families)
    chosen_vectors = _chosen("vectors", vectors, VECTORS)
    rows: list[dict[str, Any]] = []
    for template in chosen_templates:
        if template.family not in chosen_families:
            continue
        for vector in template.vectors:
            if vector in chosen_vectors:
                rows.extend(make_row(template, vector, mutation) for mutation in template.mutations)
    return rows


def _numbered(templates: Sequence[Template]) -> list[Template]:
    """The built-in templates, each named by its number within its family."""
    numbers: dict[str, int] = {}
    named = []
    for template in templates:
        numbers[template.family] = numbers.get(template.family, 0) + 1
        named.append(replace(template, name=str(numbers[template.family])))
    return named


def _chosen(what: str, given: Iterable[str] | None, known: Sequence[str]) -> set[str]:
    if given is None:
        return set(known)
    if isinstance(given, str):
        raise UsageError(f"attack_cases({what}=...) takes a list of names, e.g. {what}=[{known[0]!r}]; got {given!r}.")
    chosen = set(given)
    unknown = sorted(chosen - set(known))
    if unknown:
        raise UsageError(
            f"attack_cases({what}=...): no such {what} {', '.join(unknown)}; choose from {', '.join(known)}."
        )
    return chosen
