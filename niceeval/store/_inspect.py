"""An Inspect log (`.eval` or `.json`) read as eval runs, for `niceeval store import` (docs/store.md).

The log is read with Inspect's own reader (`inspect_ai.log.read_eval_log`) when inspect-ai is installed, else from
the documented format: a `.json` log is one `EvalLog` object; an `.eval` log is a zip holding `header.json` (or,
for a log still being written, `_journal/start.json`) and one `samples/<id>_epoch_<n>.json` per sample and epoch.
Either way the same plain data is mapped, by these rules:

- each sample and epoch is one eval run, ordered by sample id (numbers first) and epoch: id `BASE[sample id]`
  (BASE: `--eval-id`, else the task's name), run index `epoch - 1`, case id the sample's id; its input and output
  are the run's one turn;
- each scorer's value is one assertion named for the scorer (a dict value: one per key, `scorer/key`): `C` 1.0,
  `I` 0.0, `N` 0.0, `P` 0.5 and booleans are gates (only `C` and `true` pass); a number from 0 to 1 is a soft
  score (a soft miss under 1); any other value (text, lists, numbers outside 0..1) is inconclusive, named;
  the score's `answer` is the assertion's actual value, its `explanation` the reason, the sample's target the
  expected value;
- a sample's error fails its run (the error kept); a sample with no score and no error is skipped;
- the model's tokens are the run's agent spend (priced when the log has costs, else unpriced).
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from niceeval._core.assertion import AssertionResult, State
from niceeval._core.errors import ConfigError, ErrorInfo
from niceeval._core.events import Event, MessageEvent
from niceeval._core.outcome import fold
from niceeval._core.results import RunResult, Spend
from niceeval._core.summary import PlannedEval

VERSIONS = (1, 2)
"""The versions of Inspect's log format read here."""
LETTERS = {"C": 1.0, "I": 0.0, "N": 0.0, "P": 0.5}
"""Inspect's CORRECT, INCORRECT, NOANSWER and PARTIAL."""
UNMAPPED_SAMPLE_FIELDS = {
    "metadata": "sample metadata",
    "store": "the sample's store",
    "events": "the transcript's events (only the input and the final output are kept)",
    "attachments": "attachments",
    "sandbox": "sandboxes",
    "files": "sample files",
}
"""Sample fields with no niceeval equivalent, named once in the notes when a sample has them."""


@dataclass(kw_only=True)
class InspectLog:
    """An Inspect log, read as eval runs: what `niceeval store import` writes as one suite run."""

    path: Path
    task: str
    model: str | None
    status: str
    """Inspect's: `success`, `error`, `cancelled` or `started` (still being written, or killed)."""
    started_at: datetime | None
    duration_s: float
    error: str | None
    """The log's own error (`status: error`), in words."""
    plan: list[PlannedEval] = field(default_factory=list)
    runs: list[RunResult] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """What the log holds that niceeval has no equivalent for (listed once, never dropped silently)."""


def read_inspect_log(path: str | Path, *, eval_id: str | None = None) -> InspectLog:
    """Read an Inspect log as eval runs (see the module's rules), for `niceeval store import`.

    Args:
        path: The `.eval` or `.json` log.
        eval_id: The eval the samples are cases of (`samples.jsonl::dataset` to compare with `niceeval run
            samples.jsonl`); default the task's name.

    Raises:
        ConfigError: not an Inspect log, a version not read here, or a log this Python cannot open (the message
            names the file and the fix).
    """
    path = Path(path)
    data = _log_data(path)
    spec = data.get("eval") or {}
    base = eval_id or str(spec.get("task") or path.stem)
    stats = data.get("stats") or {}
    log = InspectLog(
        path=path,
        task=str(spec.get("task") or path.stem),
        model=spec.get("model"),
        status=str(data.get("status") or "started"),
        started_at=_when(stats.get("started_at")),
        duration_s=_seconds(stats.get("started_at"), stats.get("completed_at")),
        error=(data.get("error") or {}).get("message"),
    )
    epochs: dict[str, int] = {}
    for sample in sorted(data.get("samples") or [], key=_sample_order):
        run = _run_of(sample, base, str(path), log.notes)
        log.runs.append(run)
        epochs[run.eval_id] = max(epochs.get(run.eval_id, 0), run.run_index + 1)
    log.plan = [
        PlannedEval(id=eval_id, file=str(path), line=0, tags=("inspect",), runs=runs)
        for eval_id, runs in epochs.items()
    ]
    if data.get("reductions"):
        _note(log.notes, "Inspect: epoch reductions (each epoch is kept as a run of its own, its pass rate counted)")
    if not log.duration_s:
        log.duration_s = sum(run.duration_s for run in log.runs)
    return log


def _sample_order(sample: Mapping[str, Any]) -> tuple[bool, int, str, int]:
    """Numeric ids in number order, then the others by name; each sample's epochs in order."""
    sample_id, epoch = sample.get("id"), int(sample.get("epoch") or 1)
    if isinstance(sample_id, int) and not isinstance(sample_id, bool):
        return False, sample_id, "", epoch
    return True, 0, str(sample_id), epoch


def _log_data(path: Path) -> dict[str, Any]:
    """The log as plain data (the JSON of Inspect's `EvalLog`), its version checked first."""
    if not path.is_file():
        raise ConfigError(f"{path}: no such file; give the path of an Inspect log (.eval or .json).")
    reader = _inspect_reader()  # imported first: it teaches zipfile the zstd compression newer logs use
    version = _version(path)
    if version not in VERSIONS:
        raise ConfigError(
            f"{path}: an Inspect log of format version {version!r}; niceeval reads versions "
            f"{', '.join(map(str, VERSIONS))}. Upgrade niceeval (pip install -U niceeval), or write the log with "
            "an Inspect release that writes one of these."
        )
    if reader is not None:
        try:
            data: dict[str, Any] = reader(str(path)).model_dump(mode="json")
        except Exception as exc:
            raise ConfigError(f"{path}: Inspect's reader could not read this log: {exc}") from None
        return data
    return _read_plainly(path)


def _inspect_reader() -> Any:
    try:
        from inspect_ai.log import read_eval_log
    except ImportError:
        return None
    return read_eval_log


def _version(path: Path) -> object:
    if not zipfile.is_zipfile(path):
        return _json(path, path.read_bytes()).get("version")
    with _zip(path) as archive:
        names = set(archive.namelist())
        head = next((name for name in ("header.json", "_journal/start.json") if name in names), None)
        if head is None:
            raise ConfigError(f"{path}: a zip without header.json or _journal/start.json is not an Inspect .eval log.")
        return _json(path, _member(path, archive, head)).get("version")


def _read_plainly(path: Path) -> dict[str, Any]:
    """The log read from its documented format, without Inspect."""
    if not zipfile.is_zipfile(path):
        return _json(path, path.read_bytes())
    with _zip(path) as archive:
        names = archive.namelist()
        head = "header.json" if "header.json" in names else "_journal/start.json"
        data = _json(path, _member(path, archive, head))
        samples = sorted(name for name in names if name.startswith("samples/") and name.endswith(".json"))
        data["samples"] = [_json(path, _member(path, archive, name), head=False) for name in samples]
        if "reductions.json" in names:
            data["reductions"] = json.loads(_member(path, archive, "reductions.json"))
    return data


def _zip(path: Path) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(path)
    except zipfile.BadZipFile as exc:
        raise ConfigError(f"{path}: not a readable .eval log ({exc}).") from None


def _member(path: Path, archive: zipfile.ZipFile, name: str) -> bytes:
    try:
        return archive.read(name)
    except NotImplementedError:  # zstd, which Python's zipfile reads from 3.14 (inspect-ai adds it before)
        raise ConfigError(
            f"{path}: this .eval log is compressed with zstd, which this Python cannot open: pip install inspect-ai "
            "(niceeval then reads it with Inspect's reader), or write it as JSON (`inspect log convert --to json`)."
        ) from None


def _json(path: Path, raw: bytes, *, head: bool = True) -> dict[str, Any]:
    """A JSON object of the log: the log itself or its header (`head`: it carries the version), or a sample."""
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise ConfigError(f"{path}: not an Inspect log (not JSON: {exc}).") from None
    if not isinstance(data, dict) or (head and "version" not in data):
        raise ConfigError(f"{path}: not an Inspect log (no `version`); give a log that `inspect eval` wrote.")
    return data


def _run_of(sample: Mapping[str, Any], base: str, file: str, notes: list[str]) -> RunResult:
    sample_id = str(sample.get("id"))
    target = _target(sample.get("target"))
    assertions = [
        assertion
        for name, score in (sample.get("scores") or {}).items()
        for assertion in _assertions(str(name), score, target, notes)
    ]
    for key, what in UNMAPPED_SAMPLE_FIELDS.items():
        if sample.get(key):
            _note(notes, f"Inspect: {what} (no niceeval equivalent; not imported)")
    failure = sample.get("error")
    error = ErrorInfo(type="InspectError", message=str(failure.get("message", ""))) if failure else None
    skipped = not assertions and error is None
    if sample.get("limit"):
        _note(notes, "Inspect: a sample's limit (token, time or message) is kept only in its run's error, if any")
    return RunResult(
        eval_id=f"{base}[{sample_id}]",
        file=file,
        line=0,
        run_index=int(sample.get("epoch") or 1) - 1,
        outcome=fold(assertions, errored=error is not None, skipped=skipped),
        duration_s=float(sample.get("total_time") or 0.0),
        error=error,
        skip_reason="the Inspect log holds no score for this sample" if skipped else None,
        assertions=assertions,
        events=list(_turn(sample)),
        agent_spend=_spend(sample),
        case_id=sample_id,
    )


def _assertions(name: str, score: Any, target: str | None, notes: list[str]) -> Iterator[AssertionResult]:
    if not isinstance(score, Mapping):
        return
    value = score.get("value")
    answer = score.get("answer")
    reason = str(score.get("explanation") or "")
    values = value.items() if isinstance(value, Mapping) else [(None, value)]
    for key, one in values:
        label = name if key is None else f"{name}/{key}"
        yield _assertion(label, one, reason, answer, target, notes)


def _assertion(
    name: str, value: Any, reason: str, answer: Any, target: str | None, notes: list[str]
) -> AssertionResult:
    shown = None if answer is None else str(answer)
    if isinstance(value, bool) or (isinstance(value, str) and value in LETTERS):
        score = float(value) if isinstance(value, bool) else LETTERS[value]
        state: State = "passed" if score >= 1.0 else "failed"
        return AssertionResult(
            name=name, severity="gate", score=score, threshold=1.0, state=state,
            reason=reason or f"Inspect's value {value!r}", expected=target, actual=shown,
        )  # fmt: skip
    if isinstance(value, int | float) and 0.0 <= value <= 1.0:
        graded: State = "passed" if value >= 1.0 else "failed"
        return AssertionResult(
            name=name, severity="soft", score=float(value), threshold=1.0, state=graded, reason=reason,
            expected=target, actual=shown,
        )  # fmt: skip
    _note(notes, "Inspect: score values other than C/I/P/N, booleans and numbers from 0 to 1 (imported inconclusive)")
    return AssertionResult(
        name=name, severity="soft", score=None, threshold=1.0, state="inconclusive",
        reason=f"Inspect's value {json.dumps(value, default=str)[:200]} has no niceeval equivalent"
        + (f"; {reason}" if reason else ""),
        expected=target, actual=shown,
    )  # fmt: skip


def _target(target: Any) -> str | None:
    if target is None or target == "":
        return None
    if isinstance(target, list):
        return " | ".join(str(item) for item in target)
    return str(target)


def _turn(sample: Mapping[str, Any]) -> Iterator[Event]:
    """The sample's input and final output, as the run's one exchange."""
    sent = _text(sample.get("input"))
    if sent:
        yield MessageEvent(role="user", text=sent, seq=0)
    output = sample.get("output") or {}
    reply = output.get("completion") if isinstance(output, Mapping) else None
    if reply is not None:
        yield MessageEvent(role="assistant", text=str(reply), seq=1)


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):  # chat messages: what the user said
        said = [_content(message.get("content")) for message in value if isinstance(message, Mapping)]
        users = [text for message, text in zip(value, said, strict=True) if message.get("role") == "user" and text]
        return "\n\n".join(users or said)
    return "" if value is None else json.dumps(value, default=str)


def _content(content: Any) -> str:
    if isinstance(content, list):
        return "\n".join(str(part.get("text", "")) for part in content if isinstance(part, Mapping))
    return "" if content is None else str(content)


def _spend(sample: Mapping[str, Any]) -> Spend:
    usage = sample.get("model_usage") or {}
    spend = Spend()
    messages = sample.get("messages") or []
    calls = sum(1 for message in messages if isinstance(message, Mapping) and message.get("role") == "assistant")
    for model, used in usage.items():
        fresh = int(used.get("input_tokens") or 0)
        cached = int(used.get("input_tokens_cache_read") or 0)
        out = int(used.get("output_tokens") or 0)
        cost = used.get("total_cost")
        spend = spend + Spend(
            tokens=fresh + cached + out, input_tokens=fresh, output_tokens=out, cache_read_tokens=cached,
            cost=float(cost) if cost is not None else None, unpriced=[] if cost is not None else [str(model)],
        )  # fmt: skip
    return spend.model_copy(update={"calls": calls if usage else 0})


def _note(notes: list[str], text: str) -> None:
    if text not in notes:
        notes.append(text)


def _when(text: Any) -> datetime | None:
    try:
        return datetime.fromisoformat(str(text)) if text else None
    except ValueError:
        return None


def _seconds(started: Any, completed: Any) -> float:
    begin, end = _when(started), _when(completed)
    return (end - begin).total_seconds() if begin and end else 0.0
