"""`define_eval`: turns a user function taking `t` into an eval the runner can find."""

from __future__ import annotations

import difflib
import functools
import inspect
import math
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, fields
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any, Literal, cast, overload

from pydantic import BaseModel

from niceeval._core.errors import UsageError, caller_location, relative
from niceeval._core.sandbox_kinds import SandboxChoice
from niceeval._core.settings import JudgeSettings
from niceeval._eval.config import parse_judge, sandbox_problem
from niceeval._eval.variants import Variant, parse_variants

if TYPE_CHECKING:
    from niceeval._eval.reading import Reading
    from niceeval.agents._runtime import PerVariant

EvalFunction = Callable[[Any], Any]
Reader = Callable[[Any, str], Any]
"""Checks one option's value and gives it as the record holds it; `where` is `file:line: define_eval(name=...)`."""


def _option(default: Any = None, *, read: Reader) -> Any:
    """A field of `EvalOptions`: its default, and how a value given to `define_eval` is checked and read."""
    return field(default=default, metadata={"read": read})


def _as_given(value: Any, where: str) -> Any:
    return value


def _name(value: Any, where: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise UsageError(f"{where} must be a string, got {value!r}.")
    return value


def _texts(example: str) -> Reader:
    def read(value: Any, where: str) -> tuple[str, ...]:
        items = value or ()
        if isinstance(items, str) or not all(isinstance(item, str) for item in items):
            raise UsageError(f"{where} takes {example}.")
        return tuple(items)

    return read


def _timeout(value: Any, where: str) -> float | None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int | float) or value <= 0):
        raise UsageError(f"{where} is seconds, a positive number; got {value!r}.")
    return float(value) if value is not None else None


def _judge(value: Any, where: str) -> JudgeSettings | None:
    return parse_judge(value, where=where)


def _fixture(value: Any, where: str) -> str | None:
    if value is not None and not isinstance(value, str | PurePath):
        raise UsageError(f"{where} is a folder path, e.g. 'evals/fixtures/button'.")
    return str(value) if value is not None else None


def _validation(value: Any, where: str) -> Literal["pytest", "none"] | None:
    if value not in (None, "pytest", "none"):
        raise UsageError(f"{where} is 'pytest' or 'none', got {value!r}.")
    return cast(Literal["pytest", "none"] | None, value)


def _cases(value: Any, where: str) -> str | tuple[Any, ...] | None:
    if value is not None and not isinstance(value, str | PurePath | list | tuple):
        raise UsageError(f"{where} is a dataset file ('data/qa.jsonl') or a list of rows.")
    if value is None or isinstance(value, str):
        return value
    return str(value) if isinstance(value, PurePath) else tuple(value)


def _case_model(value: Any, where: str) -> type[BaseModel] | None:
    if value is not None and not (isinstance(value, type) and issubclass(value, BaseModel)):
        raise UsageError(f"{where} takes a pydantic model class, got {value!r:.60}.")
    return value


def _variants(value: Any, where: str) -> tuple[Variant, ...]:
    return parse_variants(value, where)


def _flag(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise UsageError(f"{where} is True or False.")
    return value


def _sandbox(value: Any, where: str) -> SandboxChoice | PerVariant | None:
    problem = sandbox_problem(value)
    if problem is not None:
        raise UsageError(f"{where} {problem}")
    return cast("SandboxChoice | PerVariant | None", value)


def _cluster(value: Any, where: str) -> str | None:
    if value is not None and (not isinstance(value, str) or not value):
        raise UsageError(f"{where} is a case field's name (or a label), e.g. 'source'.")
    return value


def _sample(value: Any, where: str) -> float | None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 1):
        raise UsageError(
            f"{where} is the share of traces scored, above 0 and at most 1 (0.1: one in ten); got {value!r}."
        )
    return float(value) if value is not None else None


def _where(value: Any, where: str) -> Callable[[Any], bool] | None:
    if value is not None and not callable(value):
        raise UsageError(f"{where} takes a function of the trace, e.g. where=lambda trace: trace.service == 'chat'.")
    return cast("Callable[[Any], bool] | None", value)


def _trace_file(value: Any, where: str) -> str | None:
    if value is not None and not isinstance(value, str | PurePath):
        raise UsageError(f"{where} is a saved trace's path (relative to the eval file), e.g. 'regressions/4bf9.json'.")
    return str(value) if value is not None else None


def _replay(value: Any, where: str) -> Literal["recorded", "live"]:
    if value not in ("recorded", "live"):
        raise UsageError(
            f"{where} is 'recorded' (score the saved trace as it was) or 'live' (run the agent on its input, its "
            f"tools answered from the trace); got {value!r}."
        )
    return cast('Literal["recorded", "live"]', value)


def _runs(value: Any, where: str) -> int | None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise UsageError(f"{where} is a whole number of runs, at least 1; got {value!r}.")
    return value


def _points(value: Any, where: str) -> float | None:
    if value is not None and (
        isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value <= 0
    ):
        raise UsageError(f"{where} is the points the eval is out of, a positive number (e.g. points=3); got {value!r}.")
    return float(value) if value is not None else None


@dataclass(frozen=True, kw_only=True, slots=True)
class EvalOptions:
    """Every option of `@define_eval(...)`, declared once: its default, what it means, and how it is read.

    `define_eval` accepts exactly these names (a misspelt one is an error naming the closest), `EvalSpec` holds
    them as read here, and the typed overload of `define_eval` is pinned to them by a test.
    """

    name: str | None = _option(read=_name)
    """The eval's name in its id (`path/to/file.py::name`) and in reports; the function's name by default."""
    tags: tuple[str, ...] = _option((), read=_texts("a list of strings, e.g. tags=['support']"))
    """Labels to select evals by (`niceeval run -t support`)."""
    timeout: float | None = _option(read=_timeout)
    """Seconds a run of this eval may take; the config's `timeout` by default."""
    judge: JudgeSettings | None = _option(read=_judge)
    """Judge settings for this eval (a dict or `JudgeSettings`); its keys win over the config's `judge`."""
    description: str | None = _option(read=_as_given)
    """What the eval checks, shown in reports; the function's docstring by default."""
    agent: Any = _option(read=_as_given)
    """The agent under test for this eval, overriding the config's."""
    fixture: str | None = _option(read=_fixture)
    """Folder (relative to the project root) copied into a fresh workspace for this eval: a sandbox eval."""
    validation: Literal["pytest", "none"] | None = _option(read=_validation)
    """How the workspace is scored afterwards: the fixture's hidden EVAL.py with pytest (the default when it
    exists), or not at all."""
    scripts: tuple[str, ...] = _option((), read=_texts("a list of shell commands, e.g. ['make build']"))
    """Shell commands run in the workspace afterwards; each must exit 0 (a gate each)."""
    cases: str | tuple[Any, ...] | None = _option(read=_cases)
    """A dataset file (JSONL, JSON, CSV, YAML; relative to the eval file) or rows: one eval per case (`t.case`)."""
    case_model: type[BaseModel] | None = _option(read=_case_model)
    """A pydantic model every case is validated as; `t.case` is then an instance of it."""
    variants: tuple[Variant, ...] = _option((), read=_variants)
    """Every combination of `variants={"prompt": [...], "model": [...]}`: the eval runs once per combination
    (`t.variant`)."""
    sequential_runs: bool = _option(False, read=_flag)
    """Run the `--runs N` repeats of this eval one after another instead of at the same time (for evals that
    touch shared state)."""
    sandbox: SandboxChoice | PerVariant | None = _option(read=_sandbox)
    """Which sandbox runs the workspace's commands: `local`, `bwrap`, `docker` or a declaration (`docker_sandbox(...)`,
    also built per variant by `per_variant(...)`); None: the config's default."""
    setup: tuple[str, ...] = _option((), read=_texts("a list of shell commands, e.g. ['npm ci']"))
    """Shell commands that prepare the fixture (install dependencies), run once per fixture content and cached."""
    cluster: str | None = _option(read=_cluster)
    """What the suite's standard errors count as one independent unit: a case field (`cluster="source"`: cases
    from one document form one cluster), or, for an eval without cases, a label evals share
    (docs/statistics.md)."""
    runs: int | None = _option(read=_runs)
    """How many times this eval runs, whatever `--runs` says (None: as `--runs` says)."""
    points: float | None = _option(read=_points)
    """A score eval: the points a run can earn (`t.score(n, ...)`, `.points(n)` on a check); the run's result is
    the points it earned of these. None: a pass/fail eval."""
    points_to_pass: float | None = _option(read=_points)
    """With `points=`: the points a run needs to pass (at most `points`); None: every point."""
    online: bool = _option(False, read=_flag)
    """An online eval: it scores finished production traces (`niceeval watch`), read through `t.trace`, `t.input`
    and `t.reply`, instead of driving an agent; `niceeval run` leaves it out (docs/online.md)."""
    sample: float | None = _option(read=_sample)
    """Online evals: the share of matching traces scored (0.1: one in ten, chosen by trace id); None: all."""
    where: Callable[[Any], bool] | None = _option(read=_where)
    """Online evals: which traces it scores, a function of the finished trace (`where=lambda tr: tr.service ==
    "chat"`); None: every trace."""
    trace: str | None = _option(read=_trace_file)
    """A saved production trace (relative to the eval file; `niceeval cases from-trace` writes them) this offline
    eval runs on, as `replay=` says; `t.input` and `t.trace` read it."""
    replay: Literal["recorded", "live"] = _option("recorded", read=_replay)
    """With trace=: `recorded` scores the saved trace as it was; `live` runs the agent under test (the config's,
    or agent=) on the trace's input, its tool calls answered from the trace (docs/online.md)."""


OPTION_NAMES: tuple[str, ...] = tuple(f.name for f in fields(EvalOptions))
"""The keywords `define_eval` accepts, in declaration order."""
_READERS: dict[str, Reader] = {f.name: f.metadata["read"] for f in fields(EvalOptions)}
_DEFAULTS = EvalOptions()


@dataclass(frozen=True, kw_only=True, slots=True)
class EvalSpec(EvalOptions):
    """An eval as defined by the user: the function and its options (`EvalOptions`). Calling it calls the function."""

    fn: EvalFunction
    name: str
    file: Path
    line: int
    is_async: bool = False
    reading: Reading | None = None
    """How the dataset file named on the command line is read (`--data`, `--fields`); None for an eval module."""

    def __call__(self, t: Any) -> Any:
        return self.fn(t)


def read_options(given: Mapping[str, Any], where: str | None) -> EvalOptions:
    """The options given to `define_eval`, checked and read; a `UsageError` naming `where` and the option."""
    if not given:
        return _DEFAULTS  # `@define_eval` bare, the usual case
    _check_known(given, where)
    options = EvalOptions(
        **{name: _READERS[name](value, f"{where}: define_eval({name}=...)") for name, value in given.items()}
    )
    if options.fixture is None and (options.validation is not None or options.scripts):
        raise UsageError(f"{where}: validation= and scripts= score a sandbox workspace; give fixture= too.")
    if options.fixture is None and (options.sandbox is not None or options.setup):
        raise UsageError(f"{where}: sandbox= and setup= prepare a sandbox workspace; give fixture= too.")
    if options.points_to_pass is not None and options.points is None:
        raise UsageError(f"{where}: points_to_pass= is a share of the eval's points; give points= too (e.g. points=3).")
    if options.points is not None and options.points_to_pass is not None and options.points_to_pass > options.points:
        raise UsageError(
            f"{where}: define_eval(points_to_pass={options.points_to_pass:g}) is more than the eval's "
            f"points={options.points:g}: a run could never pass; lower it to at most {options.points:g}."
        )
    if options.case_model is not None and options.cases is None:
        raise UsageError(f"{where}: case_model= validates cases; give cases= too.")
    _check_online(options, where)
    return options


_NOT_ONLINE = ("agent", "fixture", "cases", "variants", "runs")


def _check_online(options: EvalOptions, where: str | None) -> None:
    """An online eval scores a trace someone else's traffic made: no agent, dataset, fixture or repeats of its own;
    neither does an eval of a saved trace (`trace=`)."""
    if options.online and options.trace is not None:
        raise UsageError(
            f"{where}: online=True scores live traces and trace= one saved trace: give one of them (a regression "
            "written by `niceeval cases from-trace` has trace= only)."
        )
    if options.replay == "live" and options.trace is None:
        raise UsageError(f"{where}: replay='live' replays a saved trace with the live agent; give trace= too.")
    if options.trace is not None:
        given = [
            name
            for name in _NOT_ONLINE
            if getattr(options, name) not in (None, ()) and not (name == "agent" and options.replay == "live")
        ]
        if given:
            raise UsageError(
                f"{where}: an eval of a saved trace (trace=) has the trace as its agent; it takes no "
                f"{', '.join(f'{name}=' for name in given)}"
                + (" (replay='live' runs the agent= on the trace's input)." if "agent" in given else ".")
            )
    if not options.online:
        if options.sample is not None or options.where is not None:
            raise UsageError(
                f"{where}: sample= and where= choose the traces an online eval scores; give online=True too."
            )
        return
    given = [name for name in _NOT_ONLINE if getattr(options, name) not in (None, ())]
    if given:
        raise UsageError(
            f"{where}: an online eval (online=True) scores finished production traces; it takes no "
            f"{', '.join(f'{name}=' for name in given)} (drop them, or write an offline eval beside it)."
        )


def _check_known(given: Mapping[str, Any], where: str | None) -> None:
    for name in sorted(set(given) - set(OPTION_NAMES)):
        close = difflib.get_close_matches(name, OPTION_NAMES, n=1)
        guess = f"did you mean {close[0]!r}? " if close else ""
        raise UsageError(
            f"{where}: define_eval() has no option {name!r}; {guess}The options: {', '.join(sorted(OPTION_NAMES))}."
        )


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


@functools.lru_cache(maxsize=256)
def _resolved(filename: str, cwd: str) -> Path:
    # Once per file, not per eval: resolving walks the path with a system call per component.
    return (Path(cwd) / filename).resolve()


def _make_spec(fn: object, options: EvalOptions) -> EvalSpec:
    if not inspect.isfunction(fn):
        raise UsageError(f"@define_eval decorates a function taking `t`, not {type(fn).__name__}.")
    code = fn.__code__
    file = _resolved(code.co_filename, os.getcwd())
    where = f"{relative(str(file))}:{code.co_firstlineno}"
    _check_signature(fn, where)
    is_async = inspect.iscoroutinefunction(fn)
    if options.fixture is not None and not is_async:
        raise UsageError(f"{where}: a sandbox eval (fixture=...) must be `async def`: the sandbox API is awaited.")
    given = {name: getattr(options, name) for name in OPTION_NAMES}
    given.update(name=options.name or fn.__name__, description=options.description or inspect.getdoc(fn))
    return EvalSpec(**given, fn=fn, file=file, line=code.co_firstlineno, is_async=is_async)


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
    points: float | None = None,
    points_to_pass: float | None = None,
    online: bool = False,
    sample: float | None = None,
    where: Callable[[Any], bool] | None = None,
    trace: str | None = None,
    replay: Literal["recorded", "live"] = "recorded",
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
        **options: The options, each documented on `EvalSpec` (the fields it shares with `EvalOptions`):
            `name`, `tags`, `timeout`, `judge`, `cases`, `variants`, `fixture`, ... A name that is not an option
            is an error naming the closest.
    """
    where = caller_location(1)
    try:
        if isinstance(fn, str):
            raise UsageError(
                f"{where}: @define_eval({fn!r}) takes the eval's name as a keyword: write @define_eval(name={fn!r})."
            )
        read = read_options(options, where)
        if fn is not None:
            return _make_spec(fn, read)
    except UsageError as exc:
        _defer(exc)
        return cast(EvalSpec, fn) if fn is not None and not isinstance(fn, str) else _skipped

    def decorate(inner: EvalFunction) -> EvalSpec:
        try:
            return _make_spec(inner, read)
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
