"""What a promptfoo config reads from other places, read as promptfoo reads it: `$ref`s into the config, YAML 1.2
booleans, `file://` prompts (split at `---`, chat prompts as messages), tests from CSV, YAML or JSON files, and
`file://` vars (globs expand into one test per file)."""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

from niceeval._core.values import short


class ConfigError(ValueError):
    """A part of a promptfoo config that cannot be read; the message says which and what to write."""


class _Yaml12Loader(yaml.SafeLoader):
    """YAML as promptfoo's js-yaml reads it: only `true` / `false` are booleans (`Yes`, `no`, `on` stay text)."""


_Yaml12Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:bool"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Yaml12Loader.add_implicit_resolver(
    "tag:yaml.org,2002:bool",
    re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
    list("tTfF"),
)


def load_yaml(text: str) -> Any:
    """YAML with YAML 1.2's booleans (promptfoo's reading)."""
    return yaml.load(text, Loader=_Yaml12Loader)  # noqa: S506 - a SafeLoader subclass


def resolve_refs(value: Any, root: Mapping[str, Any], seen: tuple[str, ...] = ()) -> Any:
    """Every `{$ref: '#/a/b'}` replaced by what it points at in the config; raises `ConfigError` for a ref outside
    the config or to nothing."""
    if isinstance(value, list):
        return [resolve_refs(v, root, seen) for v in value]
    if not isinstance(value, Mapping):
        return value
    ref = value.get("$ref")
    if not isinstance(ref, str):
        return {k: resolve_refs(v, root, seen) for k, v in value.items()}
    if not ref.startswith("#/"):
        raise ConfigError(f"$ref {ref!r}: only references into this config ('#/path/to/entry') are read; inline it")
    if ref in seen:
        raise ConfigError(f"$ref {ref!r} refers to itself")
    found: Any = root
    for part in ref[2:].split("/"):
        key = part.replace("~1", "/").replace("~0", "~")
        if isinstance(found, Mapping) and key in found:
            found = found[key]
        elif isinstance(found, list) and key.isdigit() and int(key) < len(found):
            found = found[int(key)]
        else:
            raise ConfigError(f"$ref {ref!r}: the config has nothing at {part!r}; check the path")
    return resolve_refs(found, root, (*seen, ref))


def _paths(spec: str, base: Path) -> list[Path]:
    """The files a `file://` spec names (a glob names each match, sorted)."""
    pattern = spec.removeprefix("file://")
    if any(c in pattern for c in "*?["):
        return sorted(p for p in base.glob(pattern) if p.is_file())
    path = base / pattern
    return [path] if path.is_file() else []


def chat_text(messages: list[Any]) -> tuple[str, bool]:
    """A chat prompt's messages as the text sent (system and user contents, in order), and whether it had messages
    that are not sent (assistant turns)."""
    sent = [str(m.get("content", "")) for m in messages if m.get("role") in ("system", "user", "developer")]
    return "\n\n".join(sent), any(m.get("role") not in ("system", "user", "developer") for m in messages)


def is_chat(value: object) -> bool:
    """A list of `{role, content}` messages."""
    return isinstance(value, list) and bool(value) and all(isinstance(m, Mapping) and "role" in m for m in value)


def prompt_texts(spec: str, base: Path) -> Iterator[tuple[str, str, bool]]:
    """The prompts a `file://` prompt names: (a label suffix, the text, whether it was a chat prompt). A text file
    holds one prompt per part between `---` lines; a JSON or YAML file of messages is a chat prompt."""
    paths = _paths(spec, base)
    if not paths:
        raise ConfigError(f"prompt {spec!r}: no such file beside the config")
    for path in paths:
        text = path.read_text(encoding="utf-8")
        if path.suffix.lower() in (".json", ".yaml", ".yml"):
            data = json.loads(text) if path.suffix.lower() == ".json" else load_yaml(text)
            if not is_chat(data):
                raise ConfigError(f"prompt {spec!r}: a JSON or YAML prompt is a list of {{role, content}} messages")
            chat, _ = chat_text(data)
            yield path.name, chat, True
            continue
        parts = [p.strip("\n") for p in _split(text)]
        for index, part in enumerate(p for p in parts if p.strip()):
            yield (path.name if len(parts) == 1 else f"{path.name}:{index}"), part, False


def _split(text: str) -> list[str]:
    """A prompts file's prompts: the parts between lines that are `---` alone."""
    parts: list[str] = []
    current: list[str] = []
    for line in text.splitlines(keepends=True):
        if line.strip() == "---":
            parts.append("".join(current))
            current = []
        else:
            current.append(line)
    return [*parts, "".join(current)]


def var_value(value: Any, base: Path) -> Any:
    """A var as promptfoo loads it: `file://x.txt` is the file's text, `.json` / `.yaml` parsed, a glob the list
    of its files' values; anything else as written. Raises `ConfigError` for a file that is not there."""
    if not isinstance(value, str) or not value.startswith("file://"):
        return value
    paths = _paths(value, base)
    if not paths:
        raise ConfigError(f"var {value!r}: no such file beside the config")
    if Path(value.removeprefix("file://")).suffix.lower() in (".py", ".js", ".ts", ".mjs", ".cjs"):
        raise ConfigError(f"var {value!r}: code from a data file is never run; write the value out")
    loaded = [_file_value(path) for path in paths]
    is_glob = any(c in value for c in "*?[")
    return loaded if is_glob else loaded[0]


def _file_value(path: Path) -> Any:
    text = path.read_text(encoding="utf-8")
    if path.suffix.lower() == ".json":
        return json.loads(text)
    if path.suffix.lower() in (".yaml", ".yml"):
        return load_yaml(text)
    return text


def is_glob_var(value: Any) -> bool:
    return isinstance(value, str) and value.startswith("file://") and any(c in value for c in "*?[")


_CSV_PREFIXES = {
    "contains": "contains",
    "icontains": "icontains",
    "contains-any": "contains-any",
    "contains-all": "contains-all",
    "icontains-any": "icontains-any",
    "icontains-all": "icontains-all",
    "starts-with": "starts-with",
    "regex": "regex",
    "equals": "equals",
    "is-json": "is-json",
    "contains-json": "contains-json",
    "similar": "similar",
    "grade": "llm-rubric",
    "llm-rubric": "llm-rubric",
    "factuality": "factuality",
    "javascript": "javascript",
    "fn": "javascript",
    "eval": "javascript",
    "python": "python",
    "levenshtein": "levenshtein",
    "latency": "latency",
    "cost": "cost",
}


def csv_assertion(text: str) -> dict[str, Any]:
    """A promptfoo CSV `__expected` cell as an assertion: `type:value` (with `not-` where promptfoo has it), a
    bare value is `equals`."""
    kind, sep, value = text.partition(":")
    negate = kind.startswith("not-")
    bare = kind.removeprefix("not-").strip()
    if not sep or bare not in _CSV_PREFIXES:
        return {"type": "equals", "value": text}
    name = ("not-" if negate else "") + _CSV_PREFIXES[bare]
    value = value.strip()
    if bare in ("is-json", "contains-json"):
        return {"type": name} if not value else {"type": name, "value": json.loads(value)}
    if bare in ("latency", "cost", "levenshtein"):
        return {"type": name, "threshold": float(value)}
    return {"type": name, "value": value}


def _csv_test(record: Mapping[str, str]) -> dict[str, Any]:
    test: dict[str, Any] = {"vars": {}, "assert": []}
    for column, cell in record.items():
        if column.startswith("__expected"):
            if cell.strip():
                test["assert"].append(csv_assertion(cell))
        elif column == "__description":
            test["description"] = cell
        elif column.startswith("__metadata:"):
            test.setdefault("metadata", {})[column.split(":", 1)[1]] = cell
        elif column == "__threshold" and cell.strip():
            test["threshold"] = float(cell)
        elif column == "__metric" and cell.strip():
            test["_metric"] = cell
        elif not column.startswith("__"):
            test["vars"][column] = cell
    if "_metric" in test:
        metric = test.pop("_metric")
        test["assert"] = [{**entry, "metric": metric} for entry in test["assert"]]
    return test


def tests_from(spec: str, base: Path) -> Iterator[tuple[object, int | None, str]]:
    """The tests in the files a `file://` tests entry names: each test, its line, and the file's name."""
    paths = _paths(spec, base)
    if not paths:
        raise ConfigError(f"tests {spec!r}: no such file beside the config")
    for path in paths:
        suffix = path.suffix.lower()
        if suffix == ".csv":
            with path.open(encoding="utf-8", newline="") as handle:
                reader = csv.DictReader(handle)
                for record in reader:
                    if None in record or any(v is None for v in record.values()):
                        raise ConfigError(f"{path.name}:{reader.line_num}: this row's cells do not match the header")
                    yield _csv_test(record), reader.line_num, path.name
        elif suffix == ".jsonl":
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
                if line.strip():
                    yield json.loads(line), number, path.name
        elif suffix in (".json", ".yaml", ".yml"):
            text = path.read_text(encoding="utf-8")
            data = json.loads(text) if suffix == ".json" else load_yaml(text)
            if not isinstance(data, list):
                raise ConfigError(f"tests {spec!r}: {path.name} must hold a list of tests, got {short(data)}")
            for test in data:
                yield test, None, path.name
        else:
            raise ConfigError(f"tests {spec!r}: tests are read from CSV, JSONL, JSON or YAML files")
