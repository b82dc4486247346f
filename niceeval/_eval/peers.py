"""Peers' suite files, loaded as they are: a promptfoo config, a pydantic-evals dataset, Inspect samples.

Each becomes plain case rows (`input`, `assert:` entries the declarative table knows, `metadata`, `id`), so
everything downstream (the dataset eval, `t.check_case()`, reports, the store) sees one shape. What a peer's file
says that niceeval has no equivalent for is listed once as a note at load, never dropped silently; a row that
cannot be used is an error of its own (file, row, fix) and the other rows still run.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from niceeval._core.values import short


@dataclass(kw_only=True, slots=True)
class PeerRow:
    """One row of a peer's file: its case (`value`), or why it cannot be one (`error`)."""

    index: int
    line: int | None
    value: dict[str, Any] | None = None
    error: str | None = None


@dataclass(kw_only=True, slots=True)
class PeerFile:
    """A peer's suite file turned into rows, with what did not carry over."""

    format: str
    rows: list[PeerRow] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    prompts: dict[str, str] = field(default_factory=dict)
    """promptfoo: the prompt templates by label (a variant dimension when there are several)."""
    providers: dict[str, str] = field(default_factory=dict)
    """promptfoo: the provider ids by label."""
    model: str | None = None
    """OpenAI Evals: the completions data source's model (`openai/NAME`), which answers instead of the agent."""
    system: str | None = None
    """OpenAI Evals: the system prompt of that model (the items' shared system messages)."""
    temperature: float | None = None
    """OpenAI Evals: the data source's sampling temperature."""

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)


def model_ref(provider: str) -> str | None:
    """A peer's model id as niceeval's `provider/model`: `openai:gpt-4o`, `openai:chat:gpt-4o` -> `openai/gpt-4o`,
    `anthropic:messages:claude-x` -> `anthropic/claude-x`; None for a provider niceeval cannot call."""
    parts = provider.split(":")
    if len(parts) >= 2 and parts[0] in ("openai", "anthropic"):
        model = parts[-1]
        return f"{parts[0]}/{model}" if model and model not in ("chat", "messages", "responses") else None
    return None


# pydantic-evals --------------------------------------------------------------------------------------------------


def _evaluator(spec: object) -> tuple[str, Any]:
    """pydantic-evals' serialised evaluator: `Name`, `{Name: arg}` or `{Name: {kwargs}}`."""
    if isinstance(spec, str):
        return spec, None
    if isinstance(spec, Mapping) and len(spec) == 1:
        ((name, arg),) = spec.items()
        return str(name), arg
    return "", spec


IS_INSTANCE_TYPES = ("str", "int", "float", "bool", "dict", "list")
"""The types `is_instance` reads from a reply; any other name is a class of the user's code."""


def _kwargs(arg: Any, first: str) -> dict[str, Any]:
    return dict(arg) if isinstance(arg, Mapping) else ({} if arg is None else {first: arg})


def _pydantic_entry(spec: object, case: Mapping[str, Any], peer: PeerFile) -> dict[str, Any] | None:
    name, arg = _evaluator(spec)
    if name == "EqualsExpected":
        expected = case.get("expected_output")
        return None if expected is None else {"type": "equals", "value": expected}
    if name == "Equals":
        return {"type": "equals", "value": _kwargs(arg, "value").get("value")}
    if name == "Contains":
        kw = _kwargs(arg, "value")
        kind = "includes" if kw.get("case_sensitive", True) else "icontains"
        return {"type": kind, "value": str(kw.get("value"))}
    if name == "IsInstance":
        type_name = _kwargs(arg, "type_name").get("type_name")
        if type_name not in IS_INSTANCE_TYPES:
            why = f"IsInstance({type_name!r}) names a class of your code, which a reply read as JSON cannot be"
            peer.note(f"{why}: not run (check the agent's structured output in an eval module)")
            return {"type": "not_run", "value": {"type": f"IsInstance({type_name})", "why": why}}
        return {"type": "is_instance", "value": type_name}
    if name == "MaxDuration":
        return {"type": "max_latency", "value": _kwargs(arg, "seconds").get("seconds")}
    if name == "LLMJudge":
        return _llm_judge(_kwargs(arg, "rubric"), peer)
    peer.note(
        f"evaluator {name or short(spec)!r} has no equivalent (custom evaluators are Python; "
        "write them as checks in an eval module): not run"
    )
    if not name:
        return None
    why = f"{name} is an evaluator class of your code (Python, which niceeval never imports)"
    return {"type": "not_run", "value": {"type": name, "why": why}}  # the case shows it, never passes it silently


def _llm_judge(kw: dict[str, Any], peer: PeerFile) -> dict[str, Any]:
    rubric = str(kw.get("rubric", ""))
    if kw.get("include_expected_output"):
        rubric += "\n\nThe expected output is: {expected_output}"
    entry: dict[str, Any] = {"type": "rubric", "value": rubric}
    model = kw.get("model")
    if isinstance(model, str) and model_ref(model):
        entry["model"] = model_ref(model)
    if not kw.get("include_input", False):
        peer.note("LLMJudge: niceeval's judge is always shown the input (include_input=False ignored)")
    return entry


def load_pydantic_evals(data: Mapping[str, Any], lines: list[int | None]) -> PeerFile:
    """A pydantic-evals dataset (`cases:` with `name`, `inputs`, `expected_output`, `metadata`, `evaluators`)."""
    peer = PeerFile(format="pydantic-evals")
    shared = list(data.get("evaluators") or [])
    if data.get("report_evaluators"):
        peer.note(
            "report_evaluators (computed over the whole report, in Python) are not run: niceeval's report "
            "gives pass rates, scores and their intervals per eval and variant"
        )
    for key in sorted(set(data) - {"name", "cases", "evaluators", "report_evaluators"}):
        peer.note(f"dataset key {key!r} has no equivalent: ignored")
    for index, case in enumerate(data.get("cases") or []):
        line = lines[index] if index < len(lines) else None
        if not isinstance(case, Mapping):
            peer.rows.append(PeerRow(index=index, line=line, error="a case is a mapping with `inputs:`"))
            continue
        extra = sorted(set(case) - {"name", "inputs", "expected_output", "metadata", "evaluators"})
        if extra:
            peer.note(f"case keys {extra} have no equivalent: ignored")
        entries = [_pydantic_entry(s, case, peer) for s in [*(case.get("evaluators") or []), *shared]]
        row: dict[str, Any] = {"input": case.get("inputs"), "assert": [e for e in entries if e is not None]}
        if case.get("name") is not None:
            row["id"] = str(case["name"])
        for key in ("expected_output", "metadata"):
            if case.get(key) is not None:
                row[key] = case[key]
        peer.rows.append(PeerRow(index=index, line=line, value=row))
    return peer


# Inspect ----------------------------------------------------------------------------------------------------------

_INSPECT_KEYS = {"input", "target", "choices", "id", "metadata", "files", "setup", "sandbox"}
MULTIPLE_CHOICE = (
    "Answer the following multiple choice question. The entire content of your response should be of the "
    "following format: 'ANSWER: $LETTER' (without quotes) where LETTER is one of {letters}.\n\n{question}\n\n"
    "{choices}"
)
"""Inspect's `multiple_choice()` solver template."""


FIELD_SPEC_INPUTS = ("question", "prompt", "query", "instruction", "problem")
FIELD_SPEC_TARGETS = ("answer", "target", "expected", "expected_output", "solution", "label")


def field_spec(row: Mapping[str, Any], notes: list[str]) -> dict[str, Any] | None:
    """A row without `input`, read as Inspect reads it through a task's `FieldSpec`: its question field (the first
    of `FIELD_SPEC_INPUTS` it has) is the input and its answer field the target; None when it has no question
    field. Said once in `notes`."""
    question = next((key for key in FIELD_SPEC_INPUTS if isinstance(row.get(key), str)), None)
    if question is None:
        return None
    answer = next((key for key in FIELD_SPEC_TARGETS if key in row and key != question), None)
    mapped = {**row, "input": row[question]}
    if answer is not None:
        mapped["target"] = row[answer]
    checked = f" and `{answer}` is the target" if answer is not None else ""
    _add(
        notes,
        f"rows have no `input`: `{question}` is sent{checked}, as a task's FieldSpec would map them; rename the "
        "fields to input/target to say so",
    )
    return mapped


def is_inspect_sample(row: Mapping[str, Any]) -> bool:
    """A row in Inspect's sample shape: `input` with a `target` or `choices`, or chat messages as input."""
    chat = isinstance(row.get("input"), list)
    return "assert" not in row and ("target" in row or "choices" in row or chat)


def inspect_row(row: Mapping[str, Any], notes: list[str]) -> dict[str, Any]:
    """An Inspect sample as a case row: the target checked like Inspect's `includes()` scorer; choices asked like
    its `multiple_choice()` solver and checked by letter."""
    out = dict(row)
    for key in sorted(set(row) & {"files", "setup", "sandbox"}):
        _add(notes, f"Inspect: sample field {key!r} has no equivalent (no per-sample files or sandbox): ignored")
    if isinstance(row.get("input"), list):
        roles = {str(m.get("role")) for m in row["input"] if isinstance(m, Mapping)}
        if roles - {"user"}:
            _add(
                notes,
                "Inspect: chat input: the user messages are sent in turn; system and assistant messages are "
                "not (the agent under test has its own)",
            )
    target = row.get("target")  # as includes() reads it: whitespace and all (" No" is not found in "cannot")
    choices = row.get("choices")
    if isinstance(choices, str) and choices.strip():  # a CSV cell: the choices separated by commas
        choices = [part.strip() for part in choices.split(",") if part.strip()]
        out["choices"] = choices
        _add(notes, "Inspect: a `choices` cell is read as choices separated by commas")
    if isinstance(choices, list) and choices:
        letters = [chr(ord("A") + i) for i in range(len(choices))]
        listed = "\n".join(f"{letter}) {choice}" for letter, choice in zip(letters, choices, strict=False))
        question = row.get("input") if isinstance(row.get("input"), str) else json.dumps(row.get("input"))
        out["multiple_choice_prompt"] = MULTIPLE_CHOICE.format(
            letters=",".join(letters), question=question, choices=listed
        )
        answer = str(target[0] if isinstance(target, list) else target).strip()
        out["assert"] = [{"type": "regex", "value": rf"(?i)ANSWER\s*:\s*\$?{re.escape(answer)}\b"}]
        _add(
            notes,
            "Inspect: choices are asked like its multiple_choice() solver, the ANSWER letter checked against "
            "target (choice() scorer)",
        )
    elif isinstance(target, list) and target:
        out["assert"] = [{"type": "icontains_any", "value": [str(t) for t in target]}]
    elif target not in (None, ""):
        out["assert"] = [{"type": "icontains", "value": str(target)}]
    if "target" in row and not choices:
        _add(
            notes,
            "Inspect: the target is checked like its includes() scorer (case-insensitive); the task's own scorer is "
            "Python and not read (add `assert:` entries, or write an eval module, for another)",
        )
    return out


def _add(notes: list[str], text: str) -> None:
    if text not in notes:
        notes.append(text)
