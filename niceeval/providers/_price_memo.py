"""`.niceeval/prices.json`: the price genai-prices or the built-in table gave each model name, kept between runs.

genai-prices' data module is a large Python module, slow to load and heavy in memory (bench/NOTES.md, "Prices"),
yet a project prices the same few models (its agent's, its judge's) on every run. The runner points `_pricing` at
this file for a suite; a model found in it is priced without loading genai-prices.

An answer is kept only as long as it cannot have changed: the file is keyed on the UTC day (genai-prices knows
prices that change on a date, and niceeval reads them as of today), on genai-prices' data file (its path, size
and mtime: an upgrade changes them; read without importing the package) and on niceeval's own table. A file
under another key, or unreadable, corrupt or of another shape, is ignored (and rewritten at the suite's end); a
project that cannot be written to has no memo, and no error.
"""

from __future__ import annotations

import importlib.util
import json
import os
import zlib
from collections.abc import Mapping
from contextlib import suppress
from datetime import UTC, datetime
from pathlib import Path

from niceeval._core.settings import Price

FILE = Path(".niceeval") / "prices.json"
"""The memo of the project at the root, relative to it."""
_FORMAT = 1
"""Bumped when what a memoized price means changes (how genai-prices' answer becomes a `Price`)."""

Key = dict[str, object]
Prices = dict[str, Price | None]


def current_key(table: Mapping[str, object]) -> Key:
    """What a memo must have been written under to be read today: the day, genai-prices' data, niceeval's `table`."""
    return {
        "format": _FORMAT,
        "day": today(),
        "genai_prices": _data_stamp(),
        "table": zlib.crc32(repr(sorted(table.items())).encode()),
    }


def today() -> str:
    return datetime.now(UTC).date().isoformat()


def _data_stamp() -> str:
    """genai-prices' data file as `path:size:mtime_ns` ("absent" when not installed), found without importing it."""
    try:
        spec = importlib.util.find_spec("genai_prices")
        folders = spec.submodule_search_locations if spec is not None else None
        if not folders:
            return "absent"
        data = Path(list(folders)[0]) / "data.py"
        stat = data.stat()
    except (ImportError, ValueError, OSError):  # a broken install: no stamp to trust, so no memo hits either
        return "absent"
    return f"{data}:{stat.st_size}:{stat.st_mtime_ns}"


def read(path: Path, key: Key) -> Prices:
    """The memo's prices when `path` was written under `key`; otherwise (missing, stale, corrupt, foreign) none."""
    try:
        raw = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return {}
    if not isinstance(raw, dict) or raw.get("key") != key or not isinstance(raw.get("prices"), dict):
        return {}
    try:
        return {model: None if price is None else Price.model_validate(price) for model, price in raw["prices"].items()}
    except ValueError:  # a price of another shape (pydantic's ValidationError is a ValueError): trust none of it
        return {}


def write(path: Path, key: Key, prices: Mapping[str, Price | None]) -> bool:
    """Write `prices` (with what the file holds under `key`: another process may have added models) atomically
    (a temporary file, then `os.replace`). False when the project cannot be written to: no memo, no error."""
    merged = {**read(path, key), **prices}
    text = json.dumps(
        {
            "key": key,
            "prices": {model: None if p is None else p.model_dump() for model, p in sorted(merged.items())},
        },
        indent=1,
    )
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary.write_text(text + "\n", encoding="utf-8")
        os.replace(temporary, path)
    except OSError:
        with suppress(OSError):
            temporary.unlink(missing_ok=True)
        return False
    return True
