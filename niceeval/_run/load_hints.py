"""What to tell the user when an eval file fails to import: the likely fix, never a misleading guess.

- `from niceeval.expect import include`: the module exists, the name does not; say which names are close.
- An eval file named like a package (`evals/yaml.py` importing `yaml`): the eval's folder comes first on
  `sys.path`, so the file imports itself; say to rename it.
- `import not_installed`: the package is missing; say how to install it.
"""

from __future__ import annotations

import difflib
import re
import sys
from pathlib import Path

_MODULE_ATTRIBUTE = re.compile(r"^(?:partially initialized )?module '([\w.]+)' has no attribute '(\w+)'")


def import_hint(exc: BaseException, file: Path) -> str:
    """A hint (starting with a space, or empty) for `exc`, raised while importing the eval file `file`."""
    if isinstance(exc, ModuleNotFoundError):
        missing = (exc.name or "").split(".")[0]
        if missing and missing not in sys.modules:
            return f" (is {missing!r} installed? pip install it, or fix the name)"
        return ""
    if isinstance(exc, ImportError):
        shadow = _shadowing(exc.path, file)
        if shadow:
            return shadow
        return _close_names(exc.name, _imported_name(str(exc)))
    if isinstance(exc, AttributeError):
        found = _MODULE_ATTRIBUTE.match(str(exc))
        if found:
            module = sys.modules.get(found.group(1))
            shadow = _shadowing(getattr(module, "__file__", None), file)
            return shadow or _close_names(found.group(1), found.group(2))
    return ""


def _imported_name(message: str) -> str | None:
    found = re.match(r"cannot import name '(\w+)'", message)
    return found.group(1) if found else None


def _shadowing(module_file: str | None, eval_file: Path) -> str:
    """The hint when the module that lacks the name is a file of the eval's own folder named like a package."""
    if not module_file:
        return ""
    path = Path(module_file).resolve()
    if path.parent != eval_file.parent:
        return ""
    name = path.stem if path.name != "__init__.py" else path.parent.name
    return (
        f" ({path.name} in the eval's folder is imported instead of the package {name!r}: an eval file's folder "
        f"comes first on sys.path. Rename {path.name}, e.g. to test_{name}.py or {name}_evals.py)"
    )


def _close_names(module_name: str | None, name: str | None) -> str:
    module = sys.modules.get(module_name or "")
    if module is None or not name:
        return ""
    public = getattr(module, "__all__", None) or [n for n in vars(module) if not n.startswith("_")]
    close = difflib.get_close_matches(name, [str(n) for n in public], n=3, cutoff=0.6)
    if not close:
        return f" ({module_name} has no {name!r}; see its documentation for what it offers)"
    return f" (did you mean {' or '.join(repr(c) for c in close)}?)"
