"""An OpenAI Evals definition (`data_source_config`, `testing_criteria`, and a run's `data_source`) with its items,
as case rows: each item one case, each grader one `assert:` entry with OpenAI's pass rule.

The items come from the run's inline `file_content`, a JSONL given with `--data`, or one found beside the
definition (`NAME.jsonl`, `NAME_items.jsonl`, the dashboard's `eval_items_*.jsonl`), each line `{"item": ...}`.
A `completions` data source's `input_messages` (filled from the item) are the prompt and its `model` answers
(system messages as its system prompt, `temperature` passed on); without one, the config's agent answers the
item's `input`. `{{item.*}}` is filled here, `{{sample.*}}` when the check runs (`openai_graders.py`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from niceeval._core.values import short
from niceeval._eval.openai_graders import (
    EMBEDDING_MODEL,
    KNOWN,
    SAMPLE_FIELDS,
    GraderError,
    check,
    fill,
    fill_all,
    lookup,
    message_text,
    references,
)
from niceeval._eval.peers import PeerFile, PeerRow

_PASSED_ON = {"temperature"}
_SYSTEM_ROLES = ("system", "developer")


def is_openai_eval(data: object) -> bool:
    """An OpenAI Evals definition: it has `testing_criteria`."""
    return isinstance(data, Mapping) and isinstance(data.get("testing_criteria"), list)


def _item_files(path: Path) -> list[Path]:
    stem = path.stem
    for name in (f"{stem}.jsonl", f"{stem}_items.jsonl", f"{stem}.items.jsonl"):
        if (path.parent / name).is_file():
            return [path.parent / name]
    return sorted(path.parent.glob("eval_items_*.jsonl"))


def _items(data: Mapping[str, Any], path: Path, given: Path | None) -> Iterator[tuple[object, str]]:
    """Each item line as it is written, with where it is (`items.jsonl:3`, `eval.json: content[0]`)."""
    source = (data.get("data_source") or {}).get("source") or {}
    if given is None and isinstance(source, Mapping) and source.get("type") == "file_content":
        for index, line in enumerate(source.get("content") or []):
            yield line, f"data_source.source.content[{index}]"
        return
    for file in [given] if given is not None else _item_files(path):
        with file.open(encoding="utf-8") as lines:
            for number, text in enumerate(lines, start=1):
                if text.strip():
                    try:
                        yield json.loads(text), f"{file.name}:{number}"
                    except json.JSONDecodeError as exc:
                        yield None, f"{file.name}:{number}: not valid JSON ({exc.msg}, column {exc.colno})"


def _grader_entry(index: int, grader: Mapping[str, Any], peer: PeerFile) -> dict[str, Any] | str | None:
    """The `assert:` entry of one testing criterion, with `{{item.*}}` still to fill; a problem as text; None for a
    grader listed as not run."""
    kind, name = grader.get("type"), str(grader.get("name") or f"{grader.get('type')}[{index}]")
    where = f"testing_criteria[{index}] ({name})"
    if kind == "python":
        peer.note(
            f"python grader {name!r} is not run (its code is never executed): write it as a check in an eval "
            "module (`niceeval import` writes one to start from)"
        )
        return None
    if kind not in KNOWN:
        return f"{where}: unknown grader type {short(kind)}; the types are {', '.join(KNOWN)}"
    for ref in references(grader):
        namespace, _, field = ref.partition(".")
        if namespace == "sample" and field.split(".")[0].split("[")[0] not in SAMPLE_FIELDS:
            return f"{where}: {{{{{ref}}}}}: the sample has {', '.join(SAMPLE_FIELDS)}; use one of them"
        if namespace not in ("item", "sample"):
            return f"{where}: {{{{{ref}}}}}: templates name item.FIELD or sample.FIELD"
    body = {k: v for k, v in grader.items() if k not in ("type", "name")}
    if kind == "text_similarity" and grader.get("evaluation_metric") == "cosine":
        if "".join(str(grader.get("input")).split()) != "{{sample.output_text}}":
            return f"{where}: cosine compares the reply with the reference: set input to '{{{{sample.output_text}}}}'"
        threshold = grader.get("pass_threshold")
        reference = grader.get("reference")
        return {
            "type": "similar",
            "value": reference,
            "threshold": threshold,
            "metric": name,
            "provider": EMBEDDING_MODEL,
        }
    try:
        check({**body, "type": kind})
    except GraderError as exc:
        return f"{where}: {exc}"
    entry: dict[str, Any] = {"type": kind, "value": body, "metric": name}
    if kind in ("score_model", "label_model") and isinstance(grader.get("model"), str):
        entry["provider"] = f"openai/{grader['model']}"
        entry["value"] = {k: v for k, v in body.items() if k not in ("model", "sampling_params")}
        if grader.get("sampling_params"):
            peer.note(f"grader {name!r}: its sampling_params are not passed on to the judge")
    return entry


def _data_source(data: Mapping[str, Any], peer: PeerFile) -> Any:
    """The completions data source's input messages (None without one); its model and sampling set on `peer`."""
    source = data.get("data_source")
    if not isinstance(source, Mapping):
        return None
    if source.get("type") != "completions":
        peer.note(f"data_source of type {short(source.get('type'))} is not read: the config's agent answers")
        return None
    if isinstance(source.get("model"), str):
        peer.model = f"openai/{source['model']}"
    for key, value in (source.get("sampling_params") or {}).items():
        if key == "temperature" and isinstance(value, int | float):
            peer.temperature = float(value)
        else:
            peer.note(f"sampling_params.{key} is not passed on to the model")
    return source.get("input_messages")


def _prompt(messages: Any, item: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The item's prompt as (role, text) pairs: the data source's messages filled from the item, or its `input`."""
    if isinstance(messages, Mapping) and messages.get("type") == "item_reference":
        listed = lookup({"item": item}, str(messages.get("item_reference")))
    elif isinstance(messages, Mapping):
        listed = [
            (role, fill(text, {"item": item}, "item"))
            for role, text in (message_text(m) for m in messages.get("template") or [])
        ]
        return listed
    else:
        listed = item.get("input")
        if listed is None:
            raise GraderError(
                "the item has no `input` and the definition no completions data_source: add a data_source "
                "with input_messages, or an `input` field to the items"
            )
    if isinstance(listed, str):
        return [("user", listed)]
    if not isinstance(listed, list):
        raise GraderError(f"the prompt must be text or messages, got {short(listed)}")
    return [message_text(m) for m in listed]


def _row(item: Mapping[str, Any], entries: list[dict[str, Any]], messages: Any, peer: PeerFile) -> dict[str, Any]:
    prompt = _prompt(messages, item)
    if any(role == "assistant" for role, _ in prompt):
        peer.note("assistant messages in the prompt are not sent (the agent answers for itself)")
    system = "\n\n".join(text for role, text in prompt if role in _SYSTEM_ROLES)
    users = [text for role, text in prompt if role == "user"]
    if not users:
        raise GraderError("the prompt has no user message to send")
    rendered = []
    for position, entry in enumerate(entries):
        try:
            rendered.append({**entry, "value": fill_all(entry["value"], {"item": item}, "item")})
        except KeyError as exc:
            raise GraderError(
                f"{entry['metric']} (assert[{position}]) uses {{{{{exc.args[0]}}}}}, which this item lacks; "
                "add the field to the item or fix the grader's template"
            ) from None
    return {"input": users, "system": system, "item": dict(item), "assert": rendered}


def load_openai_eval(data: Mapping[str, Any], path: Path, given: Path | None = None) -> tuple[PeerFile, list[str]]:
    """The definition's items as rows (each grader an `assert:` entry), and the file-level problems."""
    peer, errors = PeerFile(format="OpenAI Evals"), list[str]()
    entries: list[dict[str, Any]] = []
    for index, grader in enumerate(data["testing_criteria"]):
        made = _grader_entry(index, grader if isinstance(grader, Mapping) else {"type": grader}, peer)
        if isinstance(made, str):
            errors.append(f"{made}; this grader is left out")
        elif made is not None:
            entries.append(made)
    messages = _data_source(data, peer)
    found = False
    for index, (line, where) in enumerate(_items(data, path, given)):
        found = True
        if not isinstance(line, Mapping):
            problem = where if line is None else f'{where}: an item line is {{"item": {{...}}}}, got {short(line)}'
            peer.rows.append(PeerRow(index=index, line=None, error=problem))
            continue
        if "sample" in line:
            peer.note("the items' recorded samples are not reused: the agent or model answers again")
        item = line["item"] if isinstance(line.get("item"), Mapping) else line
        try:
            row = _row(item, entries, messages, peer)
        except (GraderError, KeyError) as exc:
            text = exc.args[0] if isinstance(exc, GraderError) else f"the prompt uses {{{{{exc.args[0]}}}}}"
            fix = "" if isinstance(exc, GraderError) else ", which this item lacks; add the field to the item"
            peer.rows.append(PeerRow(index=index, line=None, error=f"item at {where}: {text}{fix}"))
            continue
        peer.rows.append(PeerRow(index=index, line=None, value={"id": index, **row}))
    if not found:
        errors.append(
            f'no items: put them beside the definition as {path.stem}.jsonl (one {{"item": {{...}}}} a line), '
            "inline them as data_source.source.content, or pass --data FILE"
        )
    _settle_system(peer)
    return peer, errors


def _settle_system(peer: PeerFile) -> None:
    """System messages: the model's system prompt when all items share one, else said before the first message."""
    systems = {row.value["system"] for row in peer.rows if row.value is not None}
    shared = peer.model is not None and len(systems) == 1
    if shared:
        peer.system = systems.pop() or None
    elif systems - {""}:
        peer.note("system messages are sent at the start of the first user message (they differ by item)")
    for row in peer.rows:
        if row.value is None:
            continue
        system, users = row.value.pop("system"), row.value.pop("input")
        if system and not shared:
            users = [f"{system}\n\n{users[0]}", *users[1:]]
        row.value["input"] = users[0] if len(users) == 1 else [{"role": "user", "content": u} for u in users]
