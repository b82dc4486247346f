"""Python functions as model tools: described from their signatures and docstrings, run with validated arguments.

A tool's parameters are a pydantic model built from its signature, so the JSON schema the model sees and the
validation of the arguments it sends come from one place. Parameter descriptions come from the Google-style
`Args:` section of the docstring; the text before the first section is the tool's description.
"""

from __future__ import annotations

import inspect
import json
import re
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, get_type_hints

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model
from pydantic_core import to_jsonable_python

from niceeval._core.errors import UsageError
from niceeval._core.events import ActionCalledEvent, EventLog
from niceeval._core.threads import call_in_thread
from niceeval._core.values import head

ToolValidator = Callable[[str, dict[str, Any]], str | None | Awaitable[str | None]]
"""`(tool_name, arguments) -> reason | None`: a reason rejects the call (recorded as failed, told to the model)."""

_SECTION = re.compile(
    r"^(Args|Arguments|Parameters|Params|Keyword Args|Keyword Arguments|Returns?|Yields?|Raises|"
    r"Examples?|Notes?|Attributes|Warnings?|See Also|References|Todo)\s*:\s*$"
)
_ARGUMENT_SECTIONS = {"Args", "Arguments", "Parameters", "Params", "Keyword Args", "Keyword Arguments"}
_PARAMETER = re.compile(r"^\*{0,2}(?P<name>\w+)\s*(\([^)]*\))?\s*:\s*(?P<text>.*)$")
_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


@dataclass(frozen=True, kw_only=True, slots=True)
class Tool:
    """A function the model may call, with what the model is told about it."""

    name: str
    description: str
    parameters: dict[str, Any]
    """The JSON schema of the arguments."""
    arguments: type[BaseModel]
    """Validates the arguments the model sends."""
    fn: Callable[..., Any]


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolRequest:
    """A tool call as the model asked for it."""

    id: str
    name: str
    arguments: dict[str, Any] | str
    """The arguments object; the raw text when the model sent something that is not a JSON object."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolResult:
    """What goes back to the model for one tool call."""

    id: str
    content: str
    is_error: bool = False


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """The summary (text before the first section) and the `Args:` descriptions of a Google-style docstring."""
    summary: list[str] = []
    params: dict[str, str] = {}
    section: str | None = None
    current: str | None = None
    indent: int | None = None
    for line in inspect.cleandoc(doc or "").splitlines():
        header = _SECTION.match(line)
        if header:
            section, current, indent = header.group(1), None, None
        elif section is None:
            summary.append(line)
        elif section in _ARGUMENT_SECTIONS and line.strip():
            width = len(line) - len(line.lstrip())
            match = _PARAMETER.match(line.strip())
            if match and (indent is None or width <= indent):
                indent, current = width, match["name"]
                params[current] = match["text"].strip()
            elif current is not None:
                params[current] = f"{params[current]} {line.strip()}".strip()
    return "\n".join(summary).strip(), params


def describe(fn: Callable[..., Any]) -> Tool:
    """Describe a Python function (sync or async) as a tool.

    Raises:
        UsageError: `fn` is not callable, takes `*args`/`**kwargs` or positional-only parameters, has an
            annotation that cannot be resolved, or a name the APIs reject.
    """
    if not callable(fn):
        raise UsageError(f"tools must be functions, got {type(fn).__name__}: {fn!r}.")
    name = getattr(fn, "__name__", type(fn).__name__)
    if not _NAME.match(name):
        raise UsageError(f"tool name {name!r} is not allowed: use letters, digits, '_' or '-' (at most 64).")
    summary, descriptions = parse_docstring(inspect.getdoc(fn))
    arguments = _arguments_model(fn, name, descriptions)
    parameters = arguments.model_json_schema()
    parameters.pop("title", None)
    return Tool(name=name, description=summary or name, parameters=parameters, arguments=arguments, fn=fn)


def describe_all(tools: Sequence[Callable[..., Any]]) -> dict[str, Tool]:
    """Describe each function; tool names must be unique.

    Raises:
        UsageError: A function cannot be described, or two tools share a name.
    """
    described: dict[str, Tool] = {}
    for fn in tools:
        tool = describe(fn)
        if tool.name in described:
            raise UsageError(f"two tools are named {tool.name!r}; tool names must be unique.")
        described[tool.name] = tool
    return described


def _arguments_model(fn: Callable[..., Any], name: str, descriptions: Mapping[str, str]) -> type[BaseModel]:
    try:
        signature = inspect.signature(fn)
        hints = get_type_hints(fn, include_extras=True)
    except (TypeError, ValueError, NameError) as exc:
        raise UsageError(f"cannot read the signature of tool {name!r}: {exc}") from exc
    fields: dict[str, Any] = {}
    for param in signature.parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD, param.POSITIONAL_ONLY):
            raise UsageError(
                f"tool {name!r}: parameter {param.name!r} must be a named parameter "
                "(no *args, **kwargs or positional-only), since the model passes arguments by name."
            )
        default = ... if param.default is param.empty else param.default
        annotation = hints.get(param.name, Any)
        fields[param.name] = (annotation, Field(default, description=descriptions.get(param.name)))
    try:
        model: type[BaseModel] = create_model(f"{name}_arguments", __config__=ConfigDict(extra="forbid"), **fields)
        model.model_json_schema()
    except Exception as exc:
        raise UsageError(f"tool {name!r} has parameters with no JSON schema: {exc}") from exc
    return model


async def run_tool(
    tools: Mapping[str, Tool], request: ToolRequest, log: EventLog, validator: ToolValidator | None = None
) -> ToolResult:
    """Run one tool call and record it as an `action.called` event.

    A tool that is unknown, gets invalid arguments, is rejected by `validator` or raises does not end the
    turn: the call is recorded `failed` with the error, and the error goes back to the model as the tool's
    result, as the APIs expect. A raising `validator` is a bug in the eval and propagates.
    """
    tool = tools.get(request.name)
    if tool is None:
        known = ", ".join(sorted(tools)) or "none"
        return _failed(log, request, f"unknown tool {request.name!r} (the tools are: {known})")
    if isinstance(request.arguments, str):
        return _failed(log, request, f"the arguments are not a JSON object: {head(request.arguments, 200)!r}")
    try:
        validated = tool.arguments.model_validate(request.arguments)
    except ValidationError as exc:
        return _failed(log, request, f"invalid arguments for {tool.name}: {_errors(exc)}")
    if validator is not None:
        verdict = validator(tool.name, request.arguments)
        reason = await verdict if inspect.isawaitable(verdict) else verdict
        if reason:
            return _failed(log, request, f"rejected by the tool validator: {reason}")
    kwargs = {field: getattr(validated, field) for field in type(validated).model_fields}
    try:
        output = await _invoke(tool.fn, kwargs)
    except Exception as exc:
        return _failed(log, request, f"{type(exc).__name__}: {exc}")
    log.emit(
        ActionCalledEvent(
            id=request.id, name=tool.name, input=request.arguments, output=_jsonable(output), status="success"
        )
    )
    return ToolResult(id=request.id, content=_as_text(output))


async def _invoke(fn: Callable[..., Any], kwargs: dict[str, Any]) -> Any:
    if inspect.iscoroutinefunction(fn):
        return await fn(**kwargs)
    result = await call_in_thread(lambda: fn(**kwargs))
    return await result if inspect.isawaitable(result) else result


def _failed(log: EventLog, request: ToolRequest, error: str) -> ToolResult:
    call_id = request.id or uuid.uuid4().hex[:12]
    log.emit(ActionCalledEvent(id=call_id, name=request.name, input=request.arguments, status="failed", error=error))
    return ToolResult(id=request.id, content=f"Error: {error}", is_error=True)


def _errors(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(map(str, e['loc'])) or 'arguments'}: {e['msg']}" for e in exc.errors()[:5])


def _jsonable(value: Any) -> Any:
    return to_jsonable_python(value, fallback=str)


def _as_text(output: Any) -> str:
    if isinstance(output, str):
        return output
    return json.dumps(_jsonable(output), ensure_ascii=False)
