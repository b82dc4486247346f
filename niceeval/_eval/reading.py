"""How a dataset file named on the command line is read: `--data FILE` (the rows a definition runs over) and
`--fields input=question,target=answer` (which of the rows' fields are a sample's input, target, ...).

`--fields` is Inspect's `FieldSpec` said on the command line: a sample file written for a task that maps its
fields (`question` / `answer`, or any names) runs as the task would read it, instead of by name inference.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FIELD_ROLES = ("input", "target", "id", "choices", "metadata")
"""What `--fields` can name, as Inspect's `FieldSpec` does (`metadata` may be named several times)."""


class MissingField(ValueError):
    """A row lacks a field `--fields` names: its message says which, and the flag that named it."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Reading:
    """The command line's say on how a dataset file is read (nothing given: as the file says)."""

    data: Path | None = None
    """`--data`: an OpenAI Evals definition's items, or a promptfoo config's tests (promptfoo's `--tests`)."""
    fields: tuple[tuple[str, str], ...] = ()
    """`--fields`: (role, field) pairs in the order given, e.g. (("input", "question"), ("target", "answer"))."""

    @property
    def fields_flag(self) -> str:
        """The `--fields` value as the user wrote it, for messages."""
        return "--fields " + ",".join(f"{role}={name}" for role, name in self.fields)


def parse_fields(text: str) -> tuple[tuple[str, str], ...]:
    """`input=question,target=answer` as (role, field) pairs.

    Raises:
        ValueError: an entry that is not ROLE=FIELD, an unknown role, or a role named twice (message says the fix).
    """
    pairs: list[tuple[str, str]] = []
    for part in (piece.strip() for piece in text.split(",")):
        role, equals, name = (side.strip() for side in part.partition("="))
        if not equals or not role or not name:
            example = "e.g. input=question,target=answer"
            raise ValueError(f"takes ROLE=FIELD pairs separated by commas, {example}; got {part!r}")
        if role not in FIELD_ROLES:
            raise ValueError(f"role {role!r} is not one of {', '.join(FIELD_ROLES)} (e.g. input=question)")
        if role != "metadata" and any(given == role for given, _ in pairs):
            raise ValueError(f"names {role!r} twice; give one field for it")
        pairs.append((role, name))
    return tuple(pairs)


def map_fields(row: Mapping[str, Any], reading: Reading) -> dict[str, Any]:
    """The row with the fields `--fields` names under their roles (`input`, `target`, `id`, `choices`, and the
    named `metadata` fields), its other fields kept (`t.case`).

    Raises:
        MissingField: the row lacks a named field.
    """
    mapped = dict(row)
    metadata: dict[str, Any] = {}
    for role, name in reading.fields:
        if name not in row:
            have = ", ".join(sorted(map(str, row))) or "none"
            raise MissingField(
                f"no field {name!r}, which {reading.fields_flag} names as the {role} (this row has {have}); "
                f"add it to the row, or name another field in --fields"
            )
        if role == "metadata":
            metadata[name] = row[name]
        else:
            mapped[role] = row[name]
    if metadata:
        mapped["metadata"] = {**_metadata(row.get("metadata")), **metadata}
    return mapped


def _metadata(given: Any) -> Mapping[str, Any]:
    """A row's own `metadata`, an object or (as Inspect writes it) a JSON string of one; else nothing."""
    if isinstance(given, str) and given.strip().startswith("{"):
        try:
            given = json.loads(given)
        except json.JSONDecodeError:
            return {}
    return given if isinstance(given, Mapping) else {}
