"""Errors that teach: each names where the problem is and what to do about it."""

from __future__ import annotations

import functools
import os
import sys
import traceback
from pathlib import Path
from types import TracebackType
from typing import Literal

from pydantic import BaseModel

from niceeval._core.failure import FailureClass
from niceeval._core.values import tail

_PACKAGE_DIR = str(Path(__file__).resolve().parent.parent) + os.sep  # the separator: not `niceeval.config.py`


class NiceevalError(Exception):
    """Base of every error niceeval raises on purpose."""


class UsageError(NiceevalError):
    """The user called the API wrongly (bad argument, wrong type, wrong place). Exit code 2."""


class ConfigError(NiceevalError):
    """The configuration or the command line is wrong. Exit code 2."""


class ErrorInfo(BaseModel):
    """An exception as stored with a run: type, message, the user's file:line and a trimmed traceback."""

    type: str
    message: str
    location: str | None = None
    traceback: str = ""
    kind: Literal["exception", "timeout", "usage"] = "exception"
    """`usage`: the eval used the API wrongly (an author bug: exit code 2); `timeout`: it ran out of time."""
    failure: FailureClass | None = None
    """The class this error gives its run (`agent`, `infra`, `eval`), decided where it was caught."""
    stops: Literal["eval", "suite"] | None = None
    """`EvalFatalError`: none of the eval's remaining runs start; `ExperimentFatalError`: the suite run stops."""


def is_niceeval_file(filename: str) -> bool:
    """True for files of the niceeval package itself."""
    return filename.startswith(_PACKAGE_DIR)


def is_framework_file(filename: str) -> bool:
    """True for files of niceeval itself, the standard library and installed packages."""
    return (
        filename.startswith(_PACKAGE_DIR)
        or filename.startswith(sys.prefix)
        or filename.startswith(sys.base_prefix)
        or "site-packages" in filename
        or filename.startswith("<")
    )


def user_location(tb: TracebackType | None) -> str | None:
    """`file:line` of the innermost traceback frame that is the user's code, if any."""
    found: str | None = None
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if not is_framework_file(filename):
            found = f"{relative(filename)}:{tb.tb_lineno}"
        tb = tb.tb_next
    return found


def caller_location(depth: int) -> str | None:
    """`file:line` of the first user frame at or above `depth` frames up the stack."""
    frame = sys._getframe(depth + 1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not is_framework_file(filename):
            return f"{relative(filename)}:{frame.f_lineno}"
        frame = frame.f_back  # type: ignore[assignment]
    return None


def relative(filename: str) -> str:
    """A path relative to the working directory when it lies below it, else as given."""
    return _relative(filename, os.getcwd())


@functools.lru_cache(maxsize=4096)
def _relative(filename: str, cwd: str) -> str:
    # Cached: every assertion records its location, and `relpath` was a large share of an assertion's cost.
    try:
        rel = os.path.relpath(filename, cwd)
    except ValueError:
        return filename
    return filename if rel.startswith("..") else rel


def error_info(exc: BaseException) -> ErrorInfo:
    """Describe an exception for the record, keeping only the user's frames in the traceback."""
    frames = [
        f for f in traceback.extract_tb(exc.__traceback__) if not is_framework_file(f.filename)
    ] or traceback.extract_tb(exc.__traceback__)[-3:]
    text = "".join(traceback.format_list(frames)) + "".join(traceback.format_exception_only(exc))
    return ErrorInfo(
        type=type(exc).__name__,
        message=str(exc),
        location=user_location(exc.__traceback__),
        traceback=tail(text, 4000),
        kind="usage" if isinstance(exc, UsageError | ConfigError) else "exception",
    )
