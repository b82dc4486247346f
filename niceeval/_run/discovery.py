"""Find eval modules, import them, and collect their evals; a broken module is reported, never dropped."""

from __future__ import annotations

import importlib.util
import re
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from niceeval._core.errors import ConfigError, NiceevalError, relative, user_location
from niceeval._eval.spec import EvalSpec, collecting_definition_errors

if TYPE_CHECKING:
    from niceeval._eval.cases import Case
    from niceeval._eval.variants import Variant

_LEADING_LOCATION = re.compile(r"^(\S+\.py):(\d+): ")
SKIP_DIRS = {"fixtures", "__pycache__", "node_modules"}


@dataclass(frozen=True, kw_only=True, slots=True)
class EvalEntry:
    """An eval found on disk, with its stable id (`file.py::fn`, or `file.py::fn[case][variant]` once planned)."""

    id: str
    spec: EvalSpec
    case: Case | None = None
    variant: Variant | None = None
    group: str | None = None
    """The id shared by the variants of one case (`file.py::fn[case]`): runs compared by max-score/select-best."""
    group_size: int = 1
    """How many variants share `group`."""
    group_index: int = 0
    """This variant's position in `group` (max-score's ties go to the first)."""

    @property
    def file(self) -> str:
        return relative(str(self.spec.file))

    @property
    def tags(self) -> tuple[str, ...]:
        """The eval's tags, and its case's."""
        return self.spec.tags + self.case.tags if self.case is not None else self.spec.tags

    @property
    def cluster(self) -> str:
        """The independent unit this eval's runs belong to, for the suite's standard errors.

        Its case (the variants of one case share its difficulty), unless `define_eval(cluster=...)` names a
        case field (its value, e.g. the source document) or, without cases, a label.
        """
        own = self.group or self.id
        if self.spec.cluster is None:
            return own
        if self.case is None:
            return f"cluster:{self.spec.cluster}"
        value = self.case.label(self.spec.cluster)
        return own if value is None else f"{self.spec.cluster}={value}"


@dataclass(frozen=True, kw_only=True, slots=True)
class LoadError:
    """A module that could not be imported (syntax error, import error, bad `define_eval`)."""

    file: str
    line: int | None
    message: str

    def describe(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where}: {self.message}"


@dataclass(kw_only=True)
class Discovery:
    """What discovery found: the evals, and the modules that failed to load."""

    evals: list[EvalEntry] = field(default_factory=list)
    errors: list[LoadError] = field(default_factory=list)
    online: list[EvalEntry] = field(default_factory=list)
    """Online evals (`define_eval(online=True)`): `niceeval watch` scores traces with them; a run leaves them out."""


@dataclass(frozen=True, slots=True)
class _Target:
    path: Path
    name: str | None


def _parse_targets(root: Path, targets: Sequence[str]) -> list[_Target]:
    parsed = []
    for raw in targets:
        text, _, name = raw.partition("::")
        path = (root / text).resolve() if not Path(text).is_absolute() else Path(text)
        if not path.exists():
            cwd_path = Path(text).resolve()
            if not cwd_path.exists():
                raise ConfigError(f"path {text!r} does not exist; pass an eval file or folder (e.g. evals/).")
            path = cwd_path
        if name and not path.is_file():
            raise ConfigError(f"{raw!r}: `::name` selects an eval inside a file; {text!r} is not a file.")
        parsed.append(_Target(path, name or None))
    return parsed


def _module_files(path: Path) -> Iterator[Path]:
    if path.is_file():
        yield path
        return
    for child in sorted(path.iterdir()):
        if child.is_dir():
            if child.name not in SKIP_DIRS and not child.name.startswith((".", "_")):
                yield from _module_files(child)
        elif child.suffix == ".py" and not child.name.startswith("_"):
            yield child


def _module_name(root: Path, file: Path) -> str:
    try:
        parts = file.relative_to(root).with_suffix("").parts
    except ValueError:
        parts = ("niceeval_outside", *file.with_suffix("").parts[-2:])
    if all(part.isidentifier() for part in parts):
        return ".".join(parts)
    return "niceeval_eval_" + "_".join("".join(c if c.isalnum() else "_" for c in p) for p in parts)


def import_eval_file(root: Path, file: Path) -> list[EvalSpec]:
    """Import one eval module (its folder first on `sys.path`) and return the evals defined in it."""
    # Like pytest's "prepend" import mode: an eval file can import helper modules that sit beside it.
    if str(file.parent) not in sys.path:
        sys.path.insert(0, str(file.parent))
    name = _module_name(root, file)
    spec = importlib.util.spec_from_file_location(name, file)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {file}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    resolved = file.resolve()
    specs = (value for value in vars(module).values() if isinstance(value, EvalSpec))
    found = {id(spec): spec for spec in specs if spec.file == resolved}
    return sorted(found.values(), key=lambda s: s.line)


def _load_error(file: Path, exc: BaseException) -> LoadError:
    if isinstance(exc, SyntaxError):
        return LoadError(
            file=relative(str(file)),
            line=exc.lineno,
            message=f"syntax error: {exc.msg}; fix this line (the module's evals did not run, the others did)",
        )
    where = user_location(exc.__traceback__)
    line = int(where.rsplit(":", 1)[1]) if where and where.startswith(relative(str(file))) else None
    if isinstance(exc, NiceevalError):  # our errors already say where; keep one location
        said = _LEADING_LOCATION.match(str(exc))
        if line is None and said and said.group(1) == relative(str(file)):
            line = int(said.group(2))  # a deferred `define_eval` error: its traceback ends inside niceeval
        return LoadError(file=relative(str(file)), line=line, message=_LEADING_LOCATION.sub("", str(exc), count=1))
    from niceeval._run.load_hints import import_hint

    hint = import_hint(exc, file)
    return LoadError(file=relative(str(file)), line=line, message=f"{type(exc).__name__}: {exc}{hint}")


def discover(root: Path, targets: Sequence[str]) -> Discovery:
    """Import every eval module under `targets` (paths, files, or `file.py::name`) and collect their evals."""
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    result = Discovery()
    seen: set[Path] = set()
    for target in _parse_targets(root, targets):
        for file in _module_files(target.path):
            resolved = file.resolve()
            if resolved in seen and target.name is None:
                continue
            seen.add(resolved)
            if (dataset := _dataset_eval(resolved)) is not None:
                _collect(result, root, resolved, [dataset], target.name)
                continue
            try:
                with collecting_definition_errors() as wrong:
                    specs = import_eval_file(root, resolved)
            except (Exception, SystemExit) as exc:
                result.errors.append(_load_error(resolved, exc))
                continue
            result.errors.extend(_load_error(resolved, exc) for exc in wrong)  # the file's other evals still run
            _collect(result, root, resolved, specs, target.name)
    return result


def _dataset_eval(file: Path) -> EvalSpec | None:
    """The eval of a dataset file named on the command line (`niceeval run data/cases.yaml`), or None. Datasets
    and their readers are loaded only then: a run of eval modules alone does not import them."""
    if file.suffix == ".py":
        return None
    from niceeval._eval.dataset_eval import dataset_eval, is_dataset

    return dataset_eval(file) if is_dataset(file) else None


def _collect(result: Discovery, root: Path, file: Path, specs: list[EvalSpec], only: str | None) -> None:
    rel = file.relative_to(root).as_posix() if file.is_relative_to(root) else relative(str(file))
    names: set[str] = set()
    for spec in specs:
        if spec.name in names:
            result.errors.append(
                LoadError(
                    file=relative(str(file)),
                    line=spec.line,
                    message=f"two evals are named {spec.name!r}; give one a different name=.",
                )
            )
            continue
        names.add(spec.name)
        if only is None or spec.name == only:
            found = result.online if spec.online else result.evals
            found.append(EvalEntry(id=f"{rel}::{spec.name}", spec=spec))
    if only is not None and only not in names:
        result.errors.append(
            LoadError(
                file=relative(str(file)),
                line=None,
                message=f"no eval named {only!r} here; found: {', '.join(sorted(names)) or 'none'}.",
            )
        )
