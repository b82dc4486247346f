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
from niceeval._eval.groups import EvalGroup
from niceeval._eval.spec import EvalSpec, collecting_definition_errors

if TYPE_CHECKING:
    from niceeval._eval.cases import Case
    from niceeval._eval.reading import Reading
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
    eval_group: EvalGroup | None = None
    """The `define_eval_group` this eval is a member of: it runs in the group's sandbox, in the group's order."""
    file: str = ""
    """The eval's file relative to the working directory, as found (empty: worked out from `spec.file` when made).

    Planning hands the found eval's on to each case and variant: working it out per run read the working directory
    four times a run, and each read lets another thread take the interpreter lock."""

    def __post_init__(self) -> None:
        if not self.file:
            object.__setattr__(self, "file", relative(str(self.spec.file)))

    @property
    def eval_group_key(self) -> str | None:
        """What the members of one eval group share (`file.py::@group`); None outside a group."""
        if self.eval_group is None:
            return None
        return f"{relative(str(self.eval_group.file))}::@{self.eval_group.name}"

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
    return import_eval_module(root, file)[0]


def import_eval_module(root: Path, file: Path) -> tuple[list[EvalSpec], list[EvalGroup]]:
    """Import one eval module (its folder first on `sys.path`): the evals and the eval groups defined in it."""
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
    groups = {id(g): g for g in vars(module).values() if isinstance(g, EvalGroup) and g.file == resolved}
    return sorted(found.values(), key=lambda s: s.line), sorted(groups.values(), key=lambda g: g.line)


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


def discover(root: Path, targets: Sequence[str], reading: Reading | None = None) -> Discovery:
    """Import every eval module under `targets` (paths, files, or `file.py::name`) and collect their evals; a
    dataset file among them is read as `reading` (`--data`, `--fields`) says."""
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
            if (dataset := _dataset_eval(resolved, reading)) is not None:
                _collect(result, root, resolved, [dataset], target.name)
                continue
            try:
                with collecting_definition_errors() as wrong:
                    specs, groups = import_eval_module(root, resolved)
            except (Exception, SystemExit) as exc:
                result.errors.append(_load_error(resolved, exc))
                continue
            result.errors.extend(_load_error(resolved, exc) for exc in wrong)  # the file's other evals still run
            _collect(result, root, resolved, specs, target.name, groups)
    return result


def _dataset_eval(file: Path, reading: Reading | None) -> EvalSpec | None:
    """The eval of a dataset file named on the command line (`niceeval run data/cases.yaml`), or None. Datasets
    and their readers are loaded only then: a run of eval modules alone does not import them."""
    if file.suffix == ".py":
        return None
    from niceeval._eval.dataset_eval import dataset_eval, is_dataset

    return dataset_eval(file, reading) if is_dataset(file) else None


def _collect(
    result: Discovery,
    root: Path,
    file: Path,
    specs: list[EvalSpec],
    only: str | None,
    groups: Sequence[EvalGroup] = (),
) -> None:
    rel = file.relative_to(root).as_posix() if file.is_relative_to(root) else relative(str(file))
    names: set[str] = set()
    membership, refused = _membership(result, file, groups)
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
        group = membership.get(id(spec))
        if group is None and id(spec) not in refused and (only is None or spec.name == only):
            found = result.online if spec.online else result.evals
            found.append(EvalEntry(id=f"{rel}::{spec.name}", spec=spec))
    for group in dict.fromkeys(membership.values()):
        names.add(group.name)
        chosen = [m for m in group.members if only in (None, group.name, m.name) and m.name in names]
        result.evals.extend(EvalEntry(id=f"{rel}::{m.name}", spec=m, eval_group=group) for m in chosen)
    if only is not None and only not in names:
        result.errors.append(
            LoadError(
                file=relative(str(file)),
                line=None,
                message=f"no eval named {only!r} here; found: {', '.join(sorted(names)) or 'none'}.",
            )
        )


def _membership(result: Discovery, file: Path, groups: Sequence[EvalGroup]) -> tuple[dict[int, EvalGroup], set[int]]:
    """Each grouped eval's group (by the eval's identity), and the members of refused groups: a member defined
    elsewhere, an eval in two groups or two groups of one name is a load error naming the group's line, and that
    group's evals do not run (alone they would run without the sandbox and setup they were written for)."""
    membership: dict[int, EvalGroup] = {}
    refused: set[int] = set()
    seen: set[str] = set()
    for group in groups:
        problem = None
        if group.name in seen:
            problem = f"two eval groups are named {group.name!r}; give one a different name."
        elif stranger := next((m for m in group.members if m.file != file), None):
            problem = f"eval {stranger.name!r} of group {group.name!r} is defined in another file; define it here."
        elif twice := next((m for m in group.members if id(m) in membership), None):
            problem = f"eval {twice.name!r} is in two groups ({membership[id(twice)].name!r}, {group.name!r})."
        if problem is not None:
            result.errors.append(LoadError(file=relative(str(file)), line=group.line, message=problem))
            refused.update(id(m) for m in group.members)
            continue
        seen.add(group.name)
        membership.update((id(m), group) for m in group.members)
    return membership, refused - set(membership)
