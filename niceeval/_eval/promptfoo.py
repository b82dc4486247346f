"""A promptfoo config (`promptfooconfig.yaml`) as case rows: `tests` with `vars` and `assert`, `defaultTest`
merged into each, `prompts` and `providers` as variant dimensions, `{{var}}` filled from each test's vars."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from niceeval._core.values import short
from niceeval._eval.peers import PeerFile, PeerRow, model_ref

_VAR = re.compile(r"\{\{\s*([A-Za-z_][\w.]*)\s*\}\}")
_TEMPLATE_CODE = re.compile(r"\{\{[^}]*\|[^}]*\}\}|\{%")
_TEST_KEYS = {"vars", "assert", "description", "metadata", "options", "threshold"}
_CALLABLE = ("openai:", "anthropic:", "echo")


def render(template: str, variables: Mapping[str, Any]) -> str:
    """Fill `{{ name }}` (and `{{ a.b }}`) from `variables`; raises KeyError naming a missing one."""

    def fill(match: re.Match[str]) -> str:
        value: Any = variables
        for part in match[1].split("."):
            if not isinstance(value, Mapping) or part not in value:
                raise KeyError(match[1])
            value = value[part]
        return value if isinstance(value, str) else str(value)

    return _VAR.sub(fill, template)


def _render_all(value: Any, variables: Mapping[str, Any]) -> Any:
    if isinstance(value, str):
        return render(value, variables)
    if isinstance(value, list):
        return [_render_all(v, variables) for v in value]
    if isinstance(value, Mapping):
        return {k: _render_all(v, variables) for k, v in value.items()}
    return value


def _prompts(data: Mapping[str, Any], base: Path, peer: PeerFile) -> None:
    raw = data.get("prompts")
    items = raw if isinstance(raw, list) else ([raw] if raw else [])
    for index, item in enumerate(items):
        label, text = str(index), item
        if isinstance(item, Mapping):
            label = str(item.get("label") or item.get("id") or index)
            text = item.get("raw") or item.get("id")
        if isinstance(text, str) and text.startswith("file://"):
            path = base / text.removeprefix("file://")
            if not path.is_file():
                peer.note(f"prompt {text!r}: no such file beside the config; left out")
                continue
            text = path.read_text(encoding="utf-8")
        if not isinstance(text, str):
            peer.note(f"prompt {short(item)} is not text (chat prompts as JSON files are not read); left out")
            continue
        if _TEMPLATE_CODE.search(text):
            peer.note(f"prompt {label!r} uses Nunjucks filters or tags; only {{{{ var }}}} is filled")
        peer.prompts[label] = text


def _providers(data: Mapping[str, Any], peer: PeerFile, errors: list[str]) -> None:
    raw = data.get("providers") or data.get("targets")
    items = raw if isinstance(raw, list) else ([raw] if raw else [])
    for item in items:
        ident = item.get("id") if isinstance(item, Mapping) else item
        label = str(item.get("label") or ident) if isinstance(item, Mapping) else str(ident)
        if not isinstance(ident, str) or not (ident == "echo" or model_ref(ident)):
            errors.append(
                f"provider {short(ident)} is not one niceeval can call (openai:MODEL, anthropic:messages:MODEL or "
                "echo); remove it and set agent= in niceeval.config.py to test your own app"
            )
            continue
        if isinstance(item, Mapping) and item.get("config"):
            peer.note(f"provider {ident!r}: its config (temperature, ...) is not passed on")
        peer.providers[label] = ident


def _test_row(test: Mapping[str, Any], default: Mapping[str, Any], peer: PeerFile) -> dict[str, Any]:
    variables = {**(default.get("vars") or {}), **(test.get("vars") or {})}
    for key in sorted(set(test) - _TEST_KEYS):
        peer.note(f"test key {key!r} has no equivalent: ignored")
    if test.get("threshold") is not None or default.get("threshold") is not None:
        peer.note("a test's `threshold` (pass on the weighted score) is not mapped: every assertion must pass")
    grader = _grader(test.get("options")) or _grader(default.get("options"))
    listed = [*(default.get("assert") or []), *(test.get("assert") or [])]
    entries = [dict(e) if isinstance(e, Mapping) else e for e in listed]
    for entry in entries:
        if isinstance(entry, dict):
            provider = entry.get("provider")
            if isinstance(provider, str):
                entry["provider"] = model_ref(provider) or provider
            elif grader is not None and str(entry.get("type", "")) in _JUDGED:
                entry["provider"] = grader
            for key in ("transform", "contextTransform", "config"):
                if entry.pop(key, None) is not None:
                    peer.note(f"assertion key {key!r} has no equivalent: ignored")
    row: dict[str, Any] = {"vars": variables, "assert": _render_all(entries, variables)}
    if test.get("description"):
        row["description"] = str(test["description"])
        row["id"] = " ".join(str(test["description"]).translate(_ID_SAFE).split())
    if test.get("metadata"):
        row["metadata"] = dict(test["metadata"])
    return row


def _row_or_error(
    test: Mapping[str, Any], default: Mapping[str, Any], peer: PeerFile
) -> tuple[dict[str, Any], str | None]:
    """The test's row (its prompt filled in when there is one prompt), or why a `{{var}}` cannot be filled."""
    fix = "which this test's vars do not set; add it under vars:"
    try:
        row = _test_row(test, default, peer)
    except KeyError as exc:
        return {}, f"an assertion uses {{{{{exc.args[0]}}}}}, {fix}"
    for label, prompt in peer.prompts.items():
        try:
            rendered = render(prompt, row["vars"])
        except KeyError as exc:
            return {}, f"prompt {label!r} uses {{{{{exc.args[0]}}}}}, {fix}"
        if len(peer.prompts) == 1:
            row["input"] = rendered
    return row, None


_ID_SAFE = str.maketrans("[]", "()")
_JUDGED = {"llm-rubric", "factuality", "model-graded-factuality", "model-graded-closedqa", "g-eval"}


def _grader(options: object) -> str | None:
    if not isinstance(options, Mapping):
        return None
    provider = options.get("provider")
    ident = provider.get("id") if isinstance(provider, Mapping) else provider
    return model_ref(ident) if isinstance(ident, str) else None


def load_promptfoo(data: Mapping[str, Any], lines: list[int | None], base: Path) -> tuple[PeerFile, list[str]]:
    """The config's tests as rows, its prompts and providers; and the file-level errors (unusable providers)."""
    peer, errors = PeerFile(format="promptfoo"), list[str]()
    _prompts(data, base, peer)
    _providers(data, peer, errors)
    for key in sorted(set(data) - {"description", "prompts", "providers", "targets", "tests", "defaultTest"}):
        peer.note(f"config key {key!r} has no equivalent: ignored")
    default = data.get("defaultTest") or {}
    if not peer.prompts:
        errors.append("the config has no usable `prompts:`; add one, e.g. prompts: ['{{question}}']")
    for index, test in enumerate(data.get("tests") or []):
        line = lines[index] if index < len(lines) else None
        if not isinstance(test, Mapping):
            why = "tests from other files are not read; inline them" if isinstance(test, str) else "a test is a mapping"
            peer.rows.append(PeerRow(index=index, line=line, error=f"{why} (got {short(test)})"))
            continue
        row, error = _row_or_error(test, default, peer)
        if error is not None:
            peer.rows.append(PeerRow(index=index, line=line, error=error))
            continue
        peer.rows.append(PeerRow(index=index, line=line, value=row))
    return peer, errors
