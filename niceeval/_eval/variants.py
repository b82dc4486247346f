"""Variants: the combinations of settings (prompts, models, ...) every eval runs once per.

`variants={"prompt": {"short": "...", "long": "..."}, "model": ["gpt-a", "gpt-b"]}` gives four combinations.
A dimension is a dict (name -> value) or a list; a list value is named by itself when it is a short plain
scalar, else by its index. The combination's name, `prompt=short,model=gpt-a`, goes into the eval id.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from niceeval._core.errors import UsageError

_PLAIN_NAME = re.compile(r"^[\w.:/@+-]{1,40}$")


class Variant(Mapping[str, Any]):
    """One combination of variant values: `t.variant["prompt"]` (or `t.variant.prompt`) is the value.

    `name` is the combination's name in eval ids and reports (`prompt=short,model=gpt-a`), and `names` maps
    each dimension to its value's name.
    """

    __slots__ = ("_values", "names", "name")

    def __init__(self, values: Mapping[str, Any], names: Mapping[str, str]) -> None:
        self._values = dict(values)
        self.names: dict[str, str] = dict(names)
        self.name = ",".join(f"{key}={value}" for key, value in self.names.items())

    def __getitem__(self, key: str) -> Any:
        try:
            return self._values[key]
        except KeyError:
            raise KeyError(f"no variant dimension {key!r}; the dimensions are: {', '.join(self._values)}") from None

    def __getattr__(self, key: str) -> Any:
        if key.startswith("_"):
            raise AttributeError(key)
        try:
            return self._values[key]
        except KeyError:
            known = ", ".join(self._values)
            raise AttributeError(f"no variant dimension {key!r}; the dimensions are: {known}") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"Variant({self.name})"

    def __hash__(self) -> int:
        return hash(self.name)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Variant) and other.name == self.name


@dataclass(frozen=True, slots=True)
class _Dimension:
    key: str
    options: tuple[tuple[str, Any], ...]


def _value_name(value: Any, index: int) -> str:
    if isinstance(value, str | int | float | bool) and _PLAIN_NAME.match(str(value)):
        return str(value)
    return str(index)


def _dimension(key: object, options: object, where: str) -> _Dimension:
    if not isinstance(key, str) or not key.isidentifier():
        raise UsageError(f"{where}: variant dimension {key!r} must be a name like 'prompt' or 'model'.")
    if isinstance(options, Mapping):
        pairs = [(str(name), value) for name, value in options.items()]
        bad = [name for name, _ in pairs if not _PLAIN_NAME.match(name)]
        if bad:
            raise UsageError(f"{where}: variant name {bad[0]!r} of {key!r} must be short, without spaces or commas.")
    elif isinstance(options, list | tuple):
        pairs = [(_value_name(value, i), value) for i, value in enumerate(options)]
    else:
        raise UsageError(
            f"{where}: variants[{key!r}] takes a list of values or a dict of name -> value, got {options!r:.60}."
        )
    if not pairs:
        raise UsageError(f"{where}: variants[{key!r}] is empty; give at least one value.")
    names = [name for name, _ in pairs]
    if len(set(names)) != len(names):
        raise UsageError(f"{where}: variants[{key!r}] has two values named alike; use a dict to name them.")
    return _Dimension(key, tuple(pairs))


def parse_variants(value: object, where: str) -> tuple[Variant, ...]:
    """Every combination of `variants={...}`, in order (the first dimension varies slowest)."""
    if value is None:
        return ()
    if not isinstance(value, Mapping) or not value:
        raise UsageError(f"{where}: variants= takes a dict of dimension -> values, e.g. {{'prompt': ['a', 'b']}}.")
    dimensions = [_dimension(key, options, where) for key, options in value.items()]
    combos = []
    for choice in itertools.product(*(d.options for d in dimensions)):
        values = {d.key: v for d, (_, v) in zip(dimensions, choice, strict=True)}
        names = {d.key: n for d, (n, _) in zip(dimensions, choice, strict=True)}
        combos.append(Variant(values, names))
    return tuple(combos)
