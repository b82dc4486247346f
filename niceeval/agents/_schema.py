"""JSON schemas for structured output: a type's schema, and the strict variant OpenAI's `json_schema` mode wants."""

from __future__ import annotations

import copy
import re
from typing import Any

from pydantic import TypeAdapter

from niceeval._core.errors import UsageError


def output_name(output: type[Any]) -> str:
    """A name for the output type that the APIs accept (`^[a-zA-Z0-9_-]{1,64}$`)."""
    name = re.sub(r"[^a-zA-Z0-9_-]", "_", getattr(output, "__name__", "output"))
    return name[:64] or "output"


def output_schema(output: type[Any]) -> dict[str, Any]:
    """The JSON schema of a structured-output type; it must describe an object, as both APIs require.

    Raises:
        UsageError: The type has no JSON schema, or its schema is not an object.
    """
    try:
        schema = TypeAdapter(output).json_schema()
    except Exception as exc:
        raise UsageError(f"output={output!r} has no JSON schema ({exc}); pass a pydantic model.") from exc
    if schema.get("type") != "object":
        raise UsageError(
            f"output={output!r} must describe a JSON object (the model APIs only return objects); "
            "pass a pydantic model, e.g. `class Answer(BaseModel): value: int`."
        )
    return schema


def strict_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A copy of `schema` in the form OpenAI's strict mode accepts.

    Every object closes (`additionalProperties: false`) and lists all its properties as required (optional
    fields stay nullable through their own type), `None` defaults go, and a `$ref` with sibling keys is
    inlined, since strict mode allows neither.
    """
    root = copy.deepcopy(schema)
    return _strict(root, root)


def _strict(node: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    for defs in ("$defs", "definitions"):
        for sub in node.get(defs, {}).values():
            _strict(sub, root)
    if node.get("type") == "object":
        node.setdefault("additionalProperties", False)
    properties = node.get("properties")
    if isinstance(properties, dict):
        node["required"] = list(properties)
        node["properties"] = {key: _strict(value, root) for key, value in properties.items()}
    if isinstance(node.get("items"), dict):
        node["items"] = _strict(node["items"], root)
    for key in ("anyOf", "allOf"):
        if isinstance(node.get(key), list):
            node[key] = [_strict(variant, root) for variant in node[key]]
    if "default" in node and node["default"] is None:
        del node["default"]
    ref = node.get("$ref")
    if isinstance(ref, str) and len(node) > 1:
        del node["$ref"]
        node = {**_resolve(ref, root), **node}
        return _strict(node, root)
    return node


def _resolve(ref: str, root: dict[str, Any]) -> dict[str, Any]:
    target: Any = root
    for part in ref.removeprefix("#/").split("/"):
        target = target[part]
    return copy.deepcopy(target) if isinstance(target, dict) else {}
