"""Cases: the rows of a dataset an eval runs over, from a list or a JSONL, JSON, CSV or YAML file.

Every row becomes one `Case`: its id (the `id` field, else the row's index), its data (`t.case`: the row as a
dict, or a pydantic model with `case_model=`), its `metadata` and `tags`, and where it came from. A row that is
not an object, fails `case_model`, or repeats an id is a `CaseError` naming the file and line. A JSONL row that is not
JSON, or a last row cut short, is a problem of its own: with a `Loading` the other rows still load.

The check that no id repeats is made by the pass that plans (`Loading.checked`): a later pass over the same file,
unchanged, trusts it and keeps nothing per case (`iter_cases(checked=...)`). A trusting pass checks a JSONL file's
stamp after each read of a block (64 KiB), before it gives a row holding bytes of that read: every row it gives
was read while the file was as the planning pass found it.
"""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import BaseModel, ValidationError

from niceeval._core.errors import UsageError, relative
from niceeval._eval.peers import field_spec, inspect_row, is_inspect_sample
from niceeval._eval.reading import MissingField, Reading, map_fields

FORMATS = (".jsonl", ".json", ".csv", ".yaml", ".yml")


class CaseError(UsageError):
    """A dataset row that cannot become a case; `file` and `line` say where it is."""

    def __init__(self, file: str, line: int | None, message: str) -> None:
        where = f"{file}:{line}" if line else file
        super().__init__(f"{where}: {message}")
        self.file = file
        self.line = line
        self.detail = message


@dataclass(frozen=True, kw_only=True, slots=True)
class Case:
    """One row of a dataset, as the eval sees it (`t.case`) and the reports record it."""

    id: str
    data: Any
    """The row: a dict, or an instance of the eval's `case_model`."""
    metadata: dict[str, Any] = field(default_factory=dict)
    tags: tuple[str, ...] = ()
    source: str = ""
    """`file:line` of the row (or `define_eval(cases=[...])` and its index)."""

    def label(self, key: str) -> Any:
        """A labelling field (`expected_label`, `split`): from the row, else from its metadata."""
        if isinstance(self.data, Mapping) and key in self.data:
            return self.data[key]
        if isinstance(self.data, BaseModel) and key in type(self.data).model_fields:
            return getattr(self.data, key)
        return self.metadata.get(key)


@dataclass(frozen=True, kw_only=True, slots=True)
class _Row:
    index: int
    line: int | None
    value: Any
    error: str | None = None
    """Why a peer's row cannot be a case (the other rows still run)."""
    note: str | None = None
    """Not a row: what a peer's file says that has no equivalent, listed once."""
    fresh: bool = True
    """Bytes of this row were read from the file since the row before it (a JSONL file is read a block at a time:
    only a block's first row is): a pass trusting an earlier one checks the file's stamp here."""


class Stamp(NamedTuple):
    """A dataset file as one pass found it (device, inode, size, modification time): while a later pass finds it
    the same, the rows it reads are the rows that pass read. A tuple: a trusted pass makes and compares one per
    row."""

    device: int
    inode: int
    size: int
    modified_ns: int

    @classmethod
    def of(cls, path: Path) -> Stamp | None:
        """The file's stamp; None when it cannot be read."""
        try:
            found = os.stat(path)
        except OSError:
            return None
        return cls(found.st_dev, found.st_ino, found.st_size, found.st_mtime_ns)


@dataclass(kw_only=True)
class Loading:
    """What loading a dataset found besides its cases: rows that could not be used, and what did not carry over
    from a peer's file (listed once). Without one, the first bad row raises."""

    problems: list[CaseError] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    checked: Stamp | None = None
    """A JSONL or CSV file as a pass that read it to the end, checking that no case id repeats, found it (unchanged
    from its first row to its last); None for other datasets, or a file that changed while it was read."""


def _rows_only(shown: str, reading: Reading, what: str) -> None:
    """Refuse `--data` for a file that holds its rows itself."""
    if reading.data is not None:
        raise CaseError(
            shown,
            None,
            f"--data names the items of an OpenAI Evals definition or the tests of a promptfoo config; this file is "
            f"{what}, which holds its rows itself: run it without --data",
        )


_BLOCK = 1 << 16
"""Bytes a JSONL file is read at a time: a later pass checks the file's stamp once per read (some 440 rows of 150
bytes), not once per row (a `stat` costs some 7 us here: a row's share of a cheap eval's CPU was a tenth)."""


def _jsonl_rows(path: Path, shown: str, reading: Reading) -> Iterator[_Row]:
    """Row by row, never the whole file: a row that is not JSON is an error row (the others still load), and a
    last line cut short (no newline, not complete JSON) says the file is truncated."""
    _rows_only(shown, reading, "a JSONL dataset")
    index = 0
    with _CountedReads(path) as raw, io.BufferedReader(raw, buffer_size=_BLOCK) as lines:
        given = 0
        for number, text in enumerate(lines, start=1):
            fresh, given = raw.reads != given, raw.reads
            if not text.strip():
                continue
            try:
                value = json.loads(text)
            except ValueError as exc:  # JSONDecodeError, or UnicodeDecodeError for bytes that are not UTF-8
                yield _Row(index=index, line=number, value=None, error=_unparsed(exc, text), fresh=fresh)
            else:
                yield _Row(index=index, line=number, value=value, fresh=fresh)
            index += 1


class _CountedReads(io.FileIO):
    """A file opened for reading that counts its reads: a line read since the count last moved holds bytes read
    since then (the buffered reader over it refills through `readinto`)."""

    reads = 0

    def __init__(self, path: Path) -> None:
        super().__init__(path, "rb")

    def readinto(self, buffer: Any) -> int | None:
        self.reads += 1
        return super().readinto(buffer)


def _unparsed(exc: ValueError, text: bytes) -> str:
    if not text.endswith(b"\n"):
        return (
            "the file ends inside this row (its last line has no newline and is not complete JSON: truncated?); "
            "the rows before it were read, complete or remove this one"
        )
    if isinstance(exc, json.JSONDecodeError):
        return f"not valid JSON ({exc.msg}, column {exc.colno}); fix this row"
    return f"not UTF-8 text ({exc}); save the file as UTF-8"


def _json_rows(path: Path, shown: str, reading: Reading) -> Iterator[_Row]:
    text = path.read_text(encoding="utf-8")
    decoder = json.JSONDecoder()
    position = _skip_space(text, 0)
    if text.startswith("{", position):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise CaseError(shown, exc.lineno, f"not valid JSON ({exc.msg}, column {exc.colno})") from None
        if peer_key(data):
            yield from _peer_rows(path, shown, data, [], reading)
            return
    if not text.startswith("[", position):
        raise CaseError(
            shown,
            _line_of(text, position),
            "a JSON dataset is a list of objects: [{...}, {...}], a promptfoo config, a pydantic-evals dataset or an "
            "OpenAI Evals definition",
        )
    _rows_only(shown, reading, "a JSON list of rows")
    position = _skip_space(text, position + 1)
    index = 0
    while not text.startswith("]", position):
        try:
            value, end = decoder.raw_decode(text, position)
        except json.JSONDecodeError as exc:
            raise CaseError(shown, exc.lineno, f"not valid JSON ({exc.msg}, column {exc.colno})") from None
        yield _Row(index=index, line=_line_of(text, position), value=value)
        index += 1
        position = _skip_space(text, end)
        if text.startswith(",", position):
            position = _skip_space(text, position + 1)
        elif not text.startswith("]", position):
            raise CaseError(shown, _line_of(text, position), "expected ',' or ']' between rows")


def _skip_space(text: str, position: int) -> int:
    while position < len(text) and text[position] in " \t\r\n":
        position += 1
    return position


def _line_of(text: str, position: int) -> int:
    return text.count("\n", 0, position) + 1


def _csv_rows(path: Path, shown: str, reading: Reading) -> Iterator[_Row]:
    _rows_only(shown, reading, "a CSV dataset")
    with path.open(encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle)
        _ = reader.fieldnames  # reads the header, so line_num counts from there
        index = 0
        line = reader.line_num + 1
        for record in reader:
            columns = len(reader.fieldnames or [])
            if None in record:
                problem = f"this row has more cells than the header's {columns}; quote cells holding commas"
                yield _Row(index=index, line=line, value=None, error=problem)
            elif any(value is None for value in record.values()):
                given = sum(value is not None for value in record.values())
                problem = f"this row has {given} cells, the header {columns}; add the missing cells (empty is fine)"
                yield _Row(index=index, line=line, value=None, error=problem)
            else:
                yield _Row(index=index, line=line, value=_csv_record(record))
            index += 1
            line = reader.line_num + 1


def _csv_record(record: dict[str, str | None]) -> dict[str, Any]:
    row: dict[str, Any] = {key: value for key, value in record.items() if value is not None}
    for key in ("metadata", "tags"):  # structured columns hold JSON (`{"split": "golden"}`, `["a", "b"]`)
        text = row.get(key)
        if isinstance(text, str) and text.strip().startswith(("{", "[")):
            try:
                row[key] = json.loads(text)
            except json.JSONDecodeError:
                pass
    return row


def _yaml_rows(path: Path, shown: str, reading: Reading) -> Iterator[_Row]:
    import yaml

    text = path.read_text(encoding="utf-8")
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        column = f", column {mark.column + 1}" if mark is not None else ""
        raise CaseError(shown, line, f"not valid YAML{column}: {getattr(exc, 'problem', None) or exc}") from None
    if isinstance(data, Mapping) and isinstance(node, yaml.MappingNode) and peer_key(data):
        if peer_key(data) == "tests":  # promptfoo reads YAML 1.2: `Yes` and `no` are text
            from niceeval._eval.promptfoo_files import load_yaml

            data = load_yaml(text)
        yield from _peer_rows(path, shown, data, _item_lines(node, peer_key(data)), reading)
        return
    if not isinstance(data, list) or not isinstance(node, yaml.SequenceNode):
        raise CaseError(
            shown,
            1,
            "a YAML dataset is a list of rows (each starting with `- `), a promptfoo config (`tests:`) or a "
            "pydantic-evals dataset (`cases:`)",
        )
    _rows_only(shown, reading, "a YAML list of rows")
    for index, (value, item) in enumerate(zip(data, node.value, strict=True)):
        yield _Row(index=index, line=item.start_mark.line + 1, value=value)


def peer_key(data: Mapping[str, Any]) -> str | None:
    """`tests` for a promptfoo config, `cases` for a pydantic-evals dataset, `testing_criteria` for an OpenAI Evals
    definition, else None."""
    if isinstance(data.get("testing_criteria"), list):
        return "testing_criteria"
    tests = data.get("tests")
    listed = isinstance(tests, list) or (isinstance(tests, str) and tests.startswith("file://"))
    if listed and ("prompts" in data or "providers" in data or "defaultTest" in data):
        return "tests"
    if isinstance(data.get("cases"), list):
        return "cases"
    return None


def _item_lines(node: Any, key: str | None) -> list[int | None]:
    for key_node, value_node in node.value:
        if getattr(key_node, "value", None) == key and isinstance(getattr(value_node, "value", None), list):
            return [item.start_mark.line + 1 for item in value_node.value]
    return []


def _peer_rows(
    path: Path, shown: str, data: Mapping[str, Any], lines: list[int | None], reading: Reading
) -> Iterator[_Row]:
    from niceeval._eval.openai_evals import load_openai_eval
    from niceeval._eval.peers import load_pydantic_evals
    from niceeval._eval.promptfoo import load_promptfoo

    kind = peer_key(data)
    if reading.fields:
        raise CaseError(
            shown,
            None,
            f"{reading.fields_flag} maps the fields of sample rows (JSONL, CSV, a JSON or YAML list); this file is a "
            f"{_PEER_NAMES[str(kind)]}, whose fields are its own: run it without --fields",
        )
    if kind == "cases":
        _rows_only(shown, reading, "a pydantic-evals dataset")
    if kind == "testing_criteria":
        peer, errors = load_openai_eval(data, path, reading.data)
    elif kind == "tests":
        if reading.data is not None:  # promptfoo's `--tests FILE`: the file's tests instead of the config's
            data, lines = {**data, "tests": f"file://{reading.data.resolve()}"}, []
        peer, errors = load_promptfoo(data, lines, path.parent)
    else:
        peer, errors = load_pydantic_evals(data, lines), []
    for note in peer.notes:
        yield _Row(index=-1, line=None, value=None, note=f"{peer.format}: {note}")
    for error in errors:
        yield _Row(index=-1, line=None, value=None, error=error)
    for row in peer.rows:
        yield _Row(index=row.index, line=row.line, value=row.value, error=row.error)


_PEER_NAMES = {
    "testing_criteria": "OpenAI Evals definition",
    "tests": "promptfoo config",
    "cases": "pydantic-evals dataset",
}
_READERS = {".jsonl": _jsonl_rows, ".json": _json_rows, ".csv": _csv_rows, ".yaml": _yaml_rows, ".yml": _yaml_rows}


def _row_error(shown: str, row: _Row, message: str) -> CaseError:
    return CaseError(shown, row.line, message if row.line else f"row {row.index}: {message}")


def _make_case(row: _Row, shown: str, model: type[BaseModel] | None) -> Case:
    value = row.value
    if type(value) is not dict:  # a parsed row is a dict: the checks against abstract classes are for the others
        if isinstance(value, BaseModel):
            value = value.model_dump()
        if not isinstance(value, Mapping):
            raise _row_error(shown, row, f"a case is an object of fields, got {type(value).__name__} {value!r:.60}")
    raw_id = value.get("id", row.index)
    if not isinstance(raw_id, str | int) or isinstance(raw_id, bool) or not str(raw_id).strip():
        raise _row_error(shown, row, f"`id` must be a non-empty string or a number, got {raw_id!r}")
    case_id = str(raw_id)
    if any(c in case_id for c in "[]\n"):
        raise _row_error(shown, row, f"`id` {case_id!r} may not contain '[', ']' or a newline")
    metadata = value.get("metadata") or {}
    if isinstance(metadata, str) and metadata.strip().startswith("{"):  # Inspect writes it as a JSON string too
        try:
            metadata = json.loads(metadata)
        except json.JSONDecodeError as exc:
            raise _row_error(shown, row, f"`metadata` is not valid JSON ({exc.msg}); write an object") from None
    if type(metadata) is not dict and not isinstance(metadata, Mapping):
        raise _row_error(shown, row, f"`metadata` must be an object, got {metadata!r:.60}")
    tags = value.get("tags") or ()
    if isinstance(tags, str) or not all(isinstance(tag, str) for tag in tags):
        raise _row_error(shown, row, f"`tags` must be a list of strings, got {tags!r:.60}")
    data: Any = value if type(value) is dict else dict(value)  # a parsed row is already ours: no copy
    if model is not None:
        try:
            data = model.model_validate(value)
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'row'}: {e['msg']}" for e in exc.errors())
            raise _row_error(shown, row, f"does not fit case_model {model.__name__}: {problems}") from None
    where = f"{shown}:{row.line}" if row.line else f"{shown}[{row.index}]"
    kept = metadata if type(metadata) is dict else dict(metadata)
    return Case(id=case_id, data=data, metadata=kept, tags=tuple(tags), source=where)


class CaseIds:
    """The case ids a dataset used so far, for the check that no id repeats: 44 bits of each id's hash, the low 12
    choosing one of 4,096 `bytearray`s that holds the next 32 as 4 bytes (a dict of each id and its row's place
    grew with every case by some 150 bytes; this by 4 and a half).

    Two different ids share those bits about once in 2**44 / n: `add` then says "maybe used" and the caller reads
    the dataset again to find the first use (`_first_use`), which settles it.
    """

    def __init__(self) -> None:
        self._buckets: dict[int, bytearray] = {}

    def add(self, case_id: str) -> bool:
        """Note `case_id`; False when it may have been noted before (its bits were)."""
        digest = hash(case_id)
        key, tail = digest & 0xFFF, (digest >> 12 & 0xFFFF_FFFF).to_bytes(4, "little")
        bucket = self._buckets.get(key)
        if bucket is None:
            self._buckets[key] = bytearray(tail)
            return True
        at = bucket.find(tail)
        while at != -1:
            if at % 4 == 0:  # a match astride two entries is no match
                return False
            at = bucket.find(tail, at + 1)
        bucket += tail
        return True


def _first_use(case: Case, dataset: _Dataset, model: type[BaseModel] | None, reading: Reading | None) -> str | None:
    """Where a row before `case`'s used its id (the dataset read again up to it); None when none did (another id
    had the same hash)."""
    unchecked = False
    for row in dataset.read():
        unchecked |= row.fresh
        if row.note is not None:
            continue
        if reading is not None and reading.fields:
            row = _mapped(row, reading)
        converted = None if row.error is not None else _converted(row, dataset.run_as_is, [])
        if converted is None:
            continue
        earlier = _make_case(converted, dataset.shown, model)
        if earlier.source == case.source:
            return None
        if earlier.id == case.id:
            return earlier.source
    return None


def dataset_path(cases: str | Path, eval_file: Path, root: Path) -> Path:
    """Where a `cases="..."` file is: beside the eval file first, then under the project root."""
    path = Path(cases)
    if path.is_absolute():
        return path
    for base in (eval_file.parent, root):
        if (base / path).is_file():
            return base / path
    return eval_file.parent / path


@dataclass(frozen=True, slots=True)
class _Dataset:
    """Where a dataset's rows come from, read as often as asked (a repeated case id reads it again)."""

    shown: str
    read: Callable[[], Iterator[_Row]]
    run_as_is: bool
    """The dataset file is the eval file itself."""
    streamed: Path | None = None
    """A file that holds all its rows and is read row by row (JSONL, CSV), so its stamp says whether they changed;
    None: checked at every pass (a list; a JSON or YAML file, which may be a peer's config reading other files)."""

    def stamp(self) -> Stamp | None:
        return Stamp.of(self.streamed) if self.streamed is not None else None


def _dataset(source: str | Path | Sequence[Any], eval_file: Path, root: Path, reading: Reading | None) -> _Dataset:
    if not isinstance(source, str | Path):
        rows = source
        shown = f"{relative(str(eval_file))}: define_eval(cases=[...])"
        return _Dataset(shown, lambda: (_Row(index=i, line=None, value=v) for i, v in enumerate(rows)), False)
    path = dataset_path(source, eval_file, root)
    shown = relative(str(path))
    reader = _READERS.get(path.suffix.lower())
    if reader is None:
        raise CaseError(shown, None, f"unknown dataset format; use one of {', '.join(FORMATS)}")
    if not path.is_file():
        raise CaseError(shown, None, "dataset file not found (paths are relative to the eval file or the root)")
    read = partial(reader, path, shown, reading or Reading())
    streamed = path if reader in (_jsonl_rows, _csv_rows) else None
    return _Dataset(shown, read, path.resolve() == eval_file.resolve(), streamed)


def iter_cases(
    source: str | Path | Sequence[Any],
    *,
    eval_file: Path,
    root: Path,
    model: type[BaseModel] | None = None,
    loading: Loading | None = None,
    reading: Reading | None = None,
    checked: Stamp | None = None,
) -> Iterator[Case]:
    """The cases of a dataset, one at a time (a JSONL file is read row by row). A promptfoo config, a
    pydantic-evals dataset and Inspect samples load as they are (`niceeval._eval.peers`).

    Args:
        loading: Where a peer's unusable rows and notes go (the other rows still load); without it they raise.
            A pass that reads the file to the end unchanged sets its `checked`.
        reading: How the command line says to read a dataset file (`--data`, `--fields`).
        checked: An earlier pass's `Loading.checked`: while the file stays as that pass found it, its check
            that no case id repeats holds and this pass keeps no id; a file found changed at the start is checked
            again, one that changes while this pass reads it ends the pass (`CaseError` at the row).

    Raises:
        CaseError: A missing or unknown file, or a bad row (naming the file and line).
    """
    dataset = _dataset(source, eval_file, root, reading)
    shown = dataset.shown
    stamp = dataset.stamp()
    seen = None if checked is not None and stamp == checked else CaseIds()
    notes: list[str] = []
    run_as_is = dataset.run_as_is
    no_input: list[_Row] = []
    unchecked = False
    for row in dataset.read():
        unchecked |= row.fresh
        if row.note is not None:
            notes.append(row.note)
            continue
        if reading is not None and reading.fields:
            row = _mapped(row, reading)
        if row.error is not None:
            _peer_problem(shown, row, loading)
            continue
        converted = _converted(row, run_as_is, notes)
        if converted is None:
            no_input.append(row)
            continue
        row = converted
        case = _make_case(row, shown, model)
        if seen is None:
            if unchecked and dataset.stamp() != checked:
                raise _row_error(shown, row, _CHANGED)
            unchecked = False
        elif not seen.add(case.id) and (first := _first_use(case, dataset, model, reading)):
            raise _row_error(shown, row, f"case id {case.id!r} is used twice (first at {first})")
        yield case
    if no_input:
        _peer_problem(shown, _Row(index=-1, line=None, value=None, error=_no_input(no_input)), loading)
    if loading is not None:
        loading.notes.extend(f"{shown}: {note}" for note in notes if f"{shown}: {note}" not in loading.notes)
        loading.checked = stamp if stamp is not None and dataset.stamp() == stamp else None


_CHANGED = (
    "the file changed while it was read again, after its case ids were checked (a row read now may repeat an id "
    "read before it); run again to use the edited file"
)


def _mapped(row: _Row, reading: Reading) -> _Row:
    """The row with the fields `--fields` names under their roles, or its error naming the field it lacks."""
    if not isinstance(row.value, Mapping):
        return row
    try:
        return _Row(index=row.index, line=row.line, value=map_fields(row.value, reading))
    except MissingField as exc:
        return _Row(index=row.index, line=row.line, value=None, error=str(exc))


def _converted(row: _Row, run_as_is: bool, notes: list[str]) -> _Row | None:
    """A row in a peer's shape as a case row: a file run as its own eval without `input` read through a FieldSpec
    (None when it names no question), an Inspect sample with its target as a check."""
    value = row.value
    if not isinstance(value, dict):
        return row
    if run_as_is and not {"input", "assert", "multiple_choice_prompt"} & set(value):
        value = field_spec(value, notes)  # the file is the eval: it needs what to send
        if value is None:
            return None
    if is_inspect_sample(value):
        value = inspect_row(value, notes)
    return row if value is row.value else _Row(index=row.index, line=row.line, value=value)


def _no_input(rows: list[_Row]) -> str:
    """One problem for every row that says nothing to send (it is the file's shape, not each row's fault)."""
    first = rows[0]
    where = f"line {first.line}" if first.line else f"row {first.index}"
    fields = ", ".join(sorted(first.value)) if isinstance(first.value, dict) else "none"
    return (
        f"{len(rows)} {'row has' if len(rows) == 1 else 'rows have'} no `input` field (the first at {where}, with "
        f"fields {fields}), so nothing is sent "
        "to the agent; name the field that holds the question `input` (and the answer `target`), or write an "
        "eval module that sends what it needs and calls t.check_case()"
    )


def _peer_problem(shown: str, row: _Row, loading: Loading | None) -> None:
    assert row.error is not None
    error = _row_error(shown, row, row.error) if row.index >= 0 else CaseError(shown, None, row.error)
    if loading is None:
        raise error
    loading.problems.append(error)
