"""A promptfoo config (`promptfooconfig.yaml`) as case rows: `tests` with `vars` and `assert`, `defaultTest`
merged into each, `prompts` and `providers` as variant dimensions, `{{var}}` filled from each test's vars.

Files the config names are read as promptfoo reads them (`promptfoo_files.py`); what niceeval never runs
(inline JavaScript, Python, webhooks) stays in the row as a `not_run` entry, recorded inconclusive under its name,
so the test's other assertions still decide.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from niceeval._core.values import short
from niceeval._eval.peers import PeerFile, PeerRow, model_ref
from niceeval._eval.promptfoo_files import (
    ConfigError,
    is_glob_var,
    prompt_texts,
    resolve_refs,
    tests_from,
    var_value,
)

_VAR = re.compile(r"\{\{\s*([A-Za-z_][\w.]*)\s*\}\}")
_TEMPLATE_CODE = re.compile(r"\{\{[^}]*\|[^}]*\}\}|\{%")
_TEST_KEYS = {"vars", "assert", "description", "metadata", "options", "threshold"}
_VARIANT_NAME = re.compile(r"[^\w.:/@+-]+")


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


def _render_known(template: str, variables: Mapping[str, Any]) -> str:
    """`{{ var }}` filled where the test sets it; the judge's own (`{{output}}`, `{{rubric}}`) are left for it."""

    def fill(match: re.Match[str]) -> str:
        try:
            return render(match[0], variables)
        except KeyError:
            return match[0]

    return _VAR.sub(fill, template)


def _render_all(value: Any, variables: Mapping[str, Any]) -> Any:
    if isinstance(value, Mapping) and isinstance(value.get("rubricPrompt"), str):
        prompt = _render_known(value["rubricPrompt"], variables)
        return {
            **_render_all({k: v for k, v in value.items() if k != "rubricPrompt"}, variables),
            "rubricPrompt": prompt,
        }
    if isinstance(value, str):
        return render(value, variables)
    if isinstance(value, list):
        return [_render_all(v, variables) for v in value]
    if isinstance(value, Mapping):
        return {k: _render_all(v, variables) for k, v in value.items()}
    return value


def variant_name(label: str, taken: Mapping[str, str], peer: PeerFile, what: str) -> str:
    """A prompt's or provider's label as a variant name (short, no spaces): the label itself when it is one,
    else a readable cut of it with a short hash, listed once so the report can be read back to the config."""
    name = _VARIANT_NAME.sub("-", label).strip("-") or "prompt"
    if name == label and len(name) <= 40 and name not in taken:
        return name
    digest = hashlib.sha256(label.encode("utf-8")).hexdigest()[:6]
    name = f"{name[:33].rstrip('-')}-{digest}"
    peer.note(f"{what} {short(label)} is the variant {name!r} (a variant name is short, without spaces)")
    return name


def _prompts(data: Mapping[str, Any], base: Path, peer: PeerFile) -> None:
    raw = data.get("prompts")
    items = raw if isinstance(raw, list) else ([raw] if raw else [])
    for index, item in enumerate(items):
        label, text = str(index), item
        if isinstance(item, Mapping):
            label = str(item.get("label") or item.get("id") or index)
            text = item.get("raw") or item.get("id")
            if item.get("config"):
                peer.note(f"prompt {short(label)}: its config is not passed on")
        if isinstance(text, str) and text.startswith("file://"):
            try:
                found = list(prompt_texts(text, base))
            except (ConfigError, ValueError) as exc:
                peer.note(f"{exc}; left out")
                continue
            for part_index, (_, part, chat) in enumerate(found):
                named = label if len(found) == 1 else f"{label}.{part_index}"
                if chat:
                    peer.note(f"prompt {named!r} is a chat prompt: its system and user messages are sent as one")
                _add_prompt(named, part, peer)
            continue
        if not isinstance(text, str):
            peer.note(f"prompt {short(item)} is not text; left out")
            continue
        _add_prompt(label, text, peer)


def _add_prompt(label: str, text: str, peer: PeerFile) -> None:
    if text.lstrip().startswith("["):  # a chat prompt written as JSON, as promptfoo reads a prompt that parses
        from niceeval._eval.promptfoo_files import chat_text, is_chat

        try:
            messages = json.loads(text)
        except ValueError:
            messages = None
        if is_chat(messages):
            text, _ = chat_text(messages)
            peer.note(f"prompt {label!r} is a chat prompt: its system and user messages are sent as one")
    if _TEMPLATE_CODE.search(text):
        peer.note(f"prompt {label!r} uses Nunjucks filters or tags; only {{{{ var }}}} is filled")
    peer.prompts[variant_name(label, peer.prompts, peer, "prompt")] = text


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
        peer.providers[variant_name(label, peer.providers, peer, "provider")] = ident


def _options(test: Mapping[str, Any], default: Mapping[str, Any], base: Path, peer: PeerFile) -> dict[str, Any]:
    """The test's grading options (its own over defaultTest's): the judge model and `rubricPrompt`."""
    options = {**(default.get("options") or {}), **(test.get("options") or {})}
    for key in sorted(set(options) - {"provider", "rubricPrompt"}):
        peer.note(f"test option {key!r} has no equivalent: ignored")
    found: dict[str, Any] = {}
    provider = options.get("provider")
    ident = provider.get("id") if isinstance(provider, Mapping) else provider
    if isinstance(ident, str) and model_ref(ident):
        found["provider"] = model_ref(ident)
    prompt = options.get("rubricPrompt")
    if prompt is not None:
        found["rubricPrompt"] = rubric_prompt(prompt, base)
    return found


def rubric_prompt(prompt: Any, base: Path) -> str:
    """promptfoo's `rubricPrompt` as niceeval's template: a file's text, a chat prompt's messages as one text."""
    from niceeval._eval.promptfoo_files import chat_text, load_yaml

    if isinstance(prompt, str) and prompt.startswith("file://"):
        prompt = (base / prompt.removeprefix("file://")).read_text(encoding="utf-8")
    if isinstance(prompt, str) and prompt.lstrip().startswith("["):
        prompt = load_yaml(prompt)  # a JSON chat array is YAML too
    if isinstance(prompt, list):
        prompt, _ = chat_text([m for m in prompt if isinstance(m, Mapping)])
    return str(prompt)


def _entries(test: Mapping[str, Any], default: Mapping[str, Any], options: dict[str, Any], peer: PeerFile) -> list[Any]:
    from niceeval._eval.declared import NO_EQUIVALENT

    listed = [*(default.get("assert") or []), *(test.get("assert") or [])]
    entries = [dict(e) if isinstance(e, Mapping) else e for e in listed]
    for position, entry in enumerate(entries):
        if not isinstance(entry, dict):
            continue
        kind = str(entry.get("type", ""))
        why = NO_EQUIVALENT.get(kind.removeprefix("not-"))
        if why is not None:
            peer.note(f"{kind} assertions are not run ({why}): recorded inconclusive")
            entries[position] = {"type": "not_run", "value": {"type": kind, "why": why}}
            continue
        provider = entry.get("provider")
        if isinstance(provider, str):
            entry["provider"] = model_ref(provider) or provider
        elif "provider" in options and kind in _JUDGED:
            entry["provider"] = options["provider"]
        elif kind in _JUDGED:
            entry["default_model"] = DEFAULT_GRADER
        if "rubricPrompt" in options and kind in ("llm-rubric", "rubric") and "rubricPrompt" not in entry:
            entry["rubricPrompt"] = options["rubricPrompt"]
        if "rubricPrompt" in entry and entry.get("value") is None:  # the grading prompt holds the criteria
            entry["value"] = "the criteria in the grading prompt"
        for key in ("transform", "contextTransform", "config"):
            if entry.pop(key, None) is not None:
                peer.note(f"assertion key {key!r} has no equivalent: ignored")
    return entries


def _test_row(test: Mapping[str, Any], default: Mapping[str, Any], base: Path, peer: PeerFile) -> dict[str, Any]:
    variables = {**(default.get("vars") or {}), **(test.get("vars") or {})}
    for key in sorted(set(test) - _TEST_KEYS):
        peer.note(f"test key {key!r} has no equivalent: ignored")
    if test.get("threshold") is not None or default.get("threshold") is not None:
        peer.note("a test's `threshold` (pass on the weighted score) is not mapped: every assertion must pass")
    entries = _entries(test, default, _options(test, default, base, peer), peer)
    row: dict[str, Any] = {"vars": variables, "assert": _render_all(entries, variables)}
    if test.get("description"):
        row["description"] = str(test["description"])
        row["id"] = " ".join(str(test["description"]).translate(_ID_SAFE).split())
    if test.get("metadata"):
        row["metadata"] = dict(test["metadata"])
    return row


def _expanded(
    test: Mapping[str, Any], default: Mapping[str, Any], base: Path
) -> Iterator[tuple[Mapping[str, Any], str]]:
    """The test with its `file://` vars loaded, once per combination of its list vars (promptfoo's expansion: a
    var holding a list, or a `file://` glob, gives one test per value), each with what it took in its id."""
    variables = {k: var_value(v, base) for k, v in dict(test.get("vars") or {}).items()}
    options = {**(default.get("options") or {}), **(test.get("options") or {})}
    raw = dict(test.get("vars") or {})
    lists = [] if options.get("disableVarExpansion") else [k for k, v in variables.items() if isinstance(v, list)]
    if not lists:
        yield {**test, "vars": variables}, ""
        return
    for combination in itertools.product(*(range(len(variables[k])) for k in lists)):
        chosen = {key: variables[key][i] for key, i in zip(lists, combination, strict=True)}
        names = [
            _glob_name(raw[key], base, i) if is_glob_var(raw[key]) else short(chosen[key])
            for key, i in zip(lists, combination, strict=True)
        ]
        yield {**test, "vars": {**variables, **chosen}}, " (" + ", ".join(names) + ")"


def _glob_name(pattern: str, base: Path, index: int) -> str:
    return sorted(p for p in base.glob(pattern.removeprefix("file://")) if p.is_file())[index].name


def _row_or_error(
    test: Mapping[str, Any], default: Mapping[str, Any], base: Path, peer: PeerFile
) -> tuple[dict[str, Any], str | None]:
    """The test's row (its prompt filled in when there is one prompt), or why a `{{var}}` cannot be filled."""
    fix = "which this test's vars do not set; add it under vars:"
    try:
        row = _test_row(test, default, base, peer)
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
DEFAULT_GRADER = "openai/gpt-5.5-2026-04-23"
"""promptfoo's grading model when a config names none (its DEFAULT_OPENAI_GRADING_MODEL, 0.121)."""
_JUDGED = {"llm-rubric", "factuality", "model-graded-factuality", "model-graded-closedqa", "g-eval"}


def _tests(data: Mapping[str, Any], lines: list[int | None], base: Path) -> Iterator[tuple[object, int | None, str]]:
    """Each test with its line, from the config or from the files its `tests:` names (`file://tests.csv`)."""
    raw = data.get("tests")
    items = raw if isinstance(raw, list) else [raw] if raw else []
    for index, item in enumerate(items):
        line = lines[index] if index < len(lines) else None
        if isinstance(item, str) and item.startswith("file://"):
            yield from tests_from(item, base)
        else:
            yield item, line, ""


def load_promptfoo(data: Mapping[str, Any], lines: list[int | None], base: Path) -> tuple[PeerFile, list[str]]:
    """The config's tests as rows, its prompts and providers; and the file-level errors (unusable providers)."""
    peer, errors = PeerFile(format="promptfoo"), list[str]()
    try:
        data = resolve_refs(data, data)
    except ConfigError as exc:
        return peer, [str(exc)]
    _prompts(data, base, peer)
    _providers(data, peer, errors)
    known = {"description", "prompts", "providers", "targets", "tests", "defaultTest"}
    for key in sorted(set(data) - known):
        peer.note(f"config key {key!r} has no equivalent: ignored")
    default = data.get("defaultTest") or {}
    if not peer.prompts:
        errors.append("the config has no usable `prompts:`; add one, e.g. prompts: ['{{question}}']")
    index = 0
    try:
        for test, line, source in _tests(data, lines, base):
            index = _add_tests(test, line, source, index, default, base, peer)
    except (ConfigError, ValueError) as exc:
        errors.append(str(exc))
    return peer, errors


def _add_tests(
    test: object, line: int | None, source: str, index: int, default: Mapping[str, Any], base: Path, peer: PeerFile
) -> int:
    """The rows of one test (several when a glob var expands it); the next row's index."""
    where = f"{source}:{line}: " if source and line else f"{source}: " if source else ""
    if not isinstance(test, Mapping):
        why = "a test is a mapping of vars and assert"
        peer.rows.append(PeerRow(index=index, line=line, error=f"{where}{why} (got {short(test)})"))
        return index + 1
    try:
        expanded = list(_expanded(test, default, base))
    except ConfigError as exc:
        peer.rows.append(PeerRow(index=index, line=line, error=f"{where}{exc}"))
        return index + 1
    first = index
    for one, suffix in expanded:
        row, error = _row_or_error(one, default, base, peer)
        if error is not None:
            peer.rows.append(PeerRow(index=index, line=line, error=f"{where}{error}"))
        else:
            if suffix and "id" in row:
                row["id"] += suffix
            elif suffix:
                row["id"] = f"{first}{suffix}"
            peer.rows.append(PeerRow(index=index, line=None if source else line, value=row))
        index += 1
    return index
