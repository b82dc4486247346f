"""Public names a package loads on first use (PEP 562), written once for every `__init__` that has them.

A package's `__init__` names where each lazy name lives and lists the same names under `if TYPE_CHECKING:` for
the type checker; the first `from package import name` imports its module, and the value is kept in the package,
so the next lookup is a plain attribute read.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_getattr(
    package: str, homes: Mapping[str, str], *, gone: Mapping[str, str] | None = None
) -> Callable[[str], Any]:
    """The module `__getattr__` of `package`: `__getattr__ = lazy_getattr(__name__, {...})`.

    Args:
        package: The package's `__name__`.
        homes: Each lazy name and the module that defines it (absolute, or relative to `package`: `"._fuzzy"`).
        gone: Names that were removed or renamed, each with the message its import raises (what to write instead).
    """
    removed = dict(gone or {})

    def __getattr__(name: str) -> Any:
        if name in removed:
            raise ImportError(removed[name], name=name)
        if name not in homes:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(homes[name], package), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
