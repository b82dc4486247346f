"""`define_eval`: turns a user function taking `t` into an eval the runner can find."""

from __future__ import annotations

import difflib
import functools
import inspect
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any, Literal, cast, overload

from pydantic import BaseModel

from niceeval._core.errors import UsageError, caller_location, relative
from niceeval._core.sandbox_kinds import SandboxChoice
from niceeval._core.settings import JudgeSettings
from niceeval._eval.config import parse_judge, sandbox_problem
from niceeval._eval.variants import Variant, parse_variants

if TYPE_CHECKING:
    from niceeval.agents._variant import PerVariant

EvalFunction = Callable[[Any], Any]


@dataclass(frozen=True, kw_only=True, slots=True)
class EvalSpec:
    """An eval as defined by the user: the function and its options. Calling it calls the function."""

    fn: EvalFunction
    name: str
    file: Path
    line: int
    tags: tuple[str, ...] = ()
    timeout: float | None = None
    judge: JudgeSettings | None = None
    description: str | None = None
    agent: Any = None
    is_async: bool = field(default=False)
    fixture: str | None = None
    """Folder (relative to the project root) copied into a fresh workspace for this eval."""
    validation: Literal["pytest", "none"] | None = None
    """How the workspace is scored afterwards: the fixture's hidden EVAL.py with pytest, or not at all."""
    scripts: tuple[str, ...] = ()
    """Shell commands run in the workspace afterwards; each must exit 0 (a gate each)."""
    cases: str | tuple[Any, ...] | None = None
    """A dataset file (JSONL, JSON, CSV, YAML; relative to the eval file) or rows: one eval per case."""
    case_model: type[BaseModel] | None = None
    """A pydantic model every case is validated as; `t.case` is then an instance of it."""
    variants: tuple[Variant, ...] = ()
    """Every combination of `variants={...}`: the eval runs once per combination."""
    sequential_runs: bool = False
    """Run the `--runs N` repeats of this eval one after another instead of at the same time."""
    sandbox: SandboxChoice | PerVariant | None = None
    """Which sandbox runs the workspace's commands: `local`, `bwrap`, `docker` or a declaration (`docker_sandbox(...)`,
    also built per variant by `per_variant(...)`); None: the config's default."""
    setup: tuple[str, ...] = ()
    """Shell commands that prepare the fixture (install dependencies), run once per fixture content and cached."""
    cluster: str | None = None
    """What the suite's standard errors count as one independent unit: a case field (`cluster="source"`: cases
    from one document form one cluster), or, for an eval without cases, a label evals share."""
    runs: int | None = None
    """How many times this eval runs, whatever `--runs` says (None: as `--runs` says)."""

    def __call__(self, t: Any) -> Any:
        return self.fn(t)


def _check_signature(fn: EvalFunction, where: str) -> None:
    code = getattr(fn, "__code__", None)
    if code is not None and not hasattr(fn, "__wrapped__") and (code.co_argcount, code.co_kwonlyargcount) == (1, 0):
        return  # `def e(t)`, `async def e(t)`: the common case, read off the code without building a signature
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required_others = [
        p for p in params[1:] if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]
    if not positional or required_others:
        got = ", ".join(p.name for p in params) or "no arguments"
        raise UsageError(
            f"{where}: eval {fn.__name__}({got}) must take exactly one argument, the eval context: "
            f"write `def {fn.__name__}(t): ...` (or `async def`)."
        )


def _check_options(options: dict[str, Any], where: str | None) -> None:
    name, tags, timeout = options.get("name"), options.get("tags") or (), options.get("timeout")
    if name is not None and not isinstance(name, str):
        raise UsageError(f"{where}: define_eval(name=...) must be a string, got {name!r}.")
    if isinstance(tags, str) or not all(isinstance(tag, str) for tag in tags):
        raise UsageError(f"{where}: define_eval(tags=...) takes a list of strings, e.g. tags=['support'].")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0):
        raise UsageError(f"{where}: define_eval(timeout=...) is seconds, a positive number; got {timeout!r}.")
    if not isinstance(options.get("sequential_runs", False), bool):
        raise UsageError(f"{where}: define_eval(sequential_runs=...) is True or False.")
    cluster = options.get("cluster")
    if cluster is not None and (not isinstance(cluster, str) or not cluster):
        raise UsageError(f"{where}: define_eval(cluster=...) is a case field's name (or a label), e.g. 'source'.")
    runs = options.get("runs")
    if runs is not None and (isinstance(runs, bool) or not isinstance(runs, int) or runs < 1):
        raise UsageError(f"{where}: define_eval(runs=...) is a whole number of runs, at least 1; got {runs!r}.")
    _check_sandbox_options(options, where)
    _check_case_options(options, where)


def _check_case_options(options: dict[str, Any], where: str | None) -> None:
    cases, model = options.get("cases"), options.get("case_model")
    if cases is not None and not isinstance(cases, str | PurePath | list | tuple):
        raise UsageError(f"{where}: define_eval(cases=...) is a dataset file ('data/qa.jsonl') or a list of rows.")
    if model is not None and not (isinstance(model, type) and issubclass(model, BaseModel)):
        raise UsageError(f"{where}: define_eval(case_model=...) takes a pydantic model class, got {model!r:.60}.")
    if model is not None and cases is None:
        raise UsageError(f"{where}: case_model= validates cases; give cases= too.")


def _cases(value: Any) -> str | tuple[Any, ...] | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, PurePath):
        return str(value)
    return tuple(value)


def _check_sandbox_options(options: dict[str, Any], where: str | None) -> None:
    fixture, validation, scripts = options.get("fixture"), options.get("validation"), options.get("scripts") or ()
    if fixture is not None and not isinstance(fixture, str | PurePath):
        raise UsageError(f"{where}: define_eval(fixture=...) is a folder path, e.g. 'evals/fixtures/button'.")
    if validation not in (None, "pytest", "none"):
        raise UsageError(f"{where}: define_eval(validation=...) is 'pytest' or 'none', got {validation!r}.")
    if isinstance(scripts, str) or not all(isinstance(script, str) for script in scripts):
        raise UsageError(f"{where}: define_eval(scripts=...) takes a list of shell commands, e.g. ['make build'].")
    if fixture is None and (validation is not None or scripts):
        raise UsageError(f"{where}: validation= and scripts= score a sandbox workspace; give fixture= too.")
    sandbox, setup = options.get("sandbox"), options.get("setup") or ()
    problem = sandbox_problem(sandbox)
    if problem is not None:
        raise UsageError(f"{where}: define_eval(sandbox=...) {problem}")
    if isinstance(setup, str) or not all(isinstance(command, str) for command in setup):
        raise UsageError(f"{where}: define_eval(setup=...) takes a list of shell commands, e.g. ['npm ci'].")
    if fixture is None and (sandbox is not None or setup):
        raise UsageError(f"{where}: sandbox= and setup= prepare a sandbox workspace; give fixture= too.")


@functools.lru_cache(maxsize=256)
def _resolved(filename: str, cwd: str) -> Path:
    # Once per file, not per eval: resolving walks the path with a system call per component.
    return (Path(cwd) / filename).resolve()


def _make_spec(fn: object, options: dict[str, Any]) -> EvalSpec:
    if not inspect.isfunction(fn):
        raise UsageError(f"@define_eval decorates a function taking `t`, not {type(fn).__name__}.")
    code = fn.__code__
    file = _resolved(code.co_filename, os.getcwd())
    where = f"{relative(str(file))}:{code.co_firstlineno}"
    _check_signature(fn, where)
    _check_options(options, where)
    if options.get("fixture") is not None and not inspect.iscoroutinefunction(fn):
        raise UsageError(f"{where}: a sandbox eval (fixture=...) must be `async def`: the sandbox API is awaited.")
    timeout = options.get("timeout")
    return EvalSpec(
        fn=fn,
        name=options.get("name") or fn.__name__,
        file=file,
        line=code.co_firstlineno,
        tags=tuple(options.get("tags") or ()),
        timeout=float(timeout) if timeout is not None else None,
        judge=parse_judge(options.get("judge"), where=f"{where}: define_eval(judge=...)"),
        description=options.get("description") or inspect.getdoc(fn),
        agent=options.get("agent"),
        is_async=inspect.iscoroutinefunction(fn),
        fixture=str(options["fixture"]) if options.get("fixture") is not None else None,
        validation=options.get("validation"),
        scripts=tuple(options.get("scripts") or ()),
        cases=_cases(options.get("cases")),
        case_model=options.get("case_model"),
        variants=parse_variants(options.get("variants"), f"{where}: define_eval(variants=...)"),
        sequential_runs=bool(options.get("sequential_runs", False)),
        sandbox=options.get("sandbox"),
        setup=tuple(options.get("setup") or ()),
        cluster=options.get("cluster"),
        runs=options.get("runs"),
    )


@overload
def define_eval(fn: EvalFunction, /) -> EvalSpec: ...


@overload
def define_eval(
    *,
    name: str | None = None,
    tags: Sequence[str] = (),
    timeout: float | None = None,
    judge: JudgeSettings | dict[str, Any] | None = None,
    description: str | None = None,
    agent: Any = None,
    fixture: str | None = None,
    validation: Literal["pytest", "none"] | None = None,
    scripts: Sequence[str] = (),
    cases: str | Sequence[Any] | None = None,
    case_model: type[BaseModel] | None = None,
    variants: dict[str, Any] | None = None,
    sequential_runs: bool = False,
    sandbox: SandboxChoice | PerVariant | None = None,
    setup: Sequence[str] = (),
    cluster: str | None = None,
    runs: int | None = None,
) -> Callable[[EvalFunction], EvalSpec]: ...


def define_eval(
    fn: EvalFunction | None = None,
    /,
    **options: Any,
) -> EvalSpec | Callable[[EvalFunction], EvalSpec]:
    """Declare an eval: a function (sync or async) that takes the eval context `t`.

    Use bare (`@define_eval`) or with options (`@define_eval(tags=["support"], timeout=60)`).
    The eval's id is `path/to/file.py::function_name`.

    Args:
        fn: The eval function, when used bare.
        **options: `name`, `tags`, `timeout` (seconds), `judge` (judge settings for this eval),
            `description`, `agent` (the agent under test for this eval, overriding the config's),
            `fixture` (a folder copied into a fresh workspace: a sandbox eval), `validation`
            (`"pytest"` runs the fixture's hidden EVAL.py afterwards, the default when it exists; `"none"`),
            `scripts` (commands run in the workspace afterwards that must exit 0), `cases` (a dataset file,
            JSONL/JSON/CSV/YAML, or a list of rows: one eval per case, `t.case`), `case_model` (a pydantic model
            each case must fit), `variants` (`{"prompt": [...], "model": [...]}`: one eval per combination,
            `t.variant`), `sequential_runs` (True: the `--runs N` repeats run one after another, for evals
            that touch shared state; by default they run at the same time), `sandbox` (`"local"`, `"bwrap"`,
            `"docker"` or `docker_sandbox(...)`: what runs the workspace's commands, also `per_variant(...)`; the
            config's default otherwise), `setup` (commands that
            prepare the fixture, such as installing dependencies: run once per fixture content, then cached),
            `cluster` (a case field whose value groups cases that share a source, e.g. `"source"`, or a label for
            an eval without cases: the suite's standard errors then count clusters, not cases;
            docs/statistics.md), `runs` (how many times this eval runs: it wins over `--runs`).
    """
    known = {
        *("name", "tags", "timeout", "judge", "description", "agent", "fixture", "validation", "scripts"),
        *("cases", "case_model", "variants", "sequential_runs", "sandbox", "setup", "cluster", "runs"),
    }
    where = caller_location(1)
    try:
        _check_known(options, known, where)
        if isinstance(fn, str):
            raise UsageError(
                f"{where}: @define_eval({fn!r}) takes the eval's name as a keyword: write @define_eval(name={fn!r})."
            )
        if fn is not None:
            return _make_spec(fn, options)
        _check_options(options, where)
    except UsageError as exc:
        _defer(exc)
        return cast(EvalSpec, fn) if fn is not None and not isinstance(fn, str) else _skipped

    def decorate(inner: EvalFunction) -> EvalSpec:
        try:
            return _make_spec(inner, options)
        except UsageError as exc:
            _defer(exc)
            return cast(EvalSpec, inner)

    return decorate


_DEFERRED: ContextVar[list[UsageError] | None] = ContextVar("niceeval_definition_errors", default=None)


@contextmanager
def collecting_definition_errors() -> Iterator[list[UsageError]]:
    """While discovery imports an eval file: a wrong `@define_eval` is recorded in the list instead of raised,
    and leaves its function undecorated (not an eval), so the file's other evals still load."""
    errors: list[UsageError] = []
    token = _DEFERRED.set(errors)
    try:
        yield errors
    finally:
        _DEFERRED.reset(token)


def _defer(exc: UsageError) -> None:
    """Record `exc` for discovery, or raise it when no discovery is collecting (a plain import, a test)."""
    deferred = _DEFERRED.get()
    if deferred is None:
        raise exc
    deferred.append(exc)


def _skipped(inner: EvalFunction) -> EvalSpec:
    return cast(EvalSpec, inner)


def _check_known(options: dict[str, Any], known: set[str], where: str | None) -> None:
    for name in sorted(set(options) - known):
        close = difflib.get_close_matches(name, sorted(known), n=1)
        guess = f"did you mean {close[0]!r}? " if close else ""
        raise UsageError(
            f"{where}: define_eval() has no option {name!r}; {guess}The options: {', '.join(sorted(known))}."
        )
