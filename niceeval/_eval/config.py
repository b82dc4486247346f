"""`define_config` and loading `niceeval.config.py`: where evals live, limits, judge, pricing, the agent."""

from __future__ import annotations

import difflib
import importlib.util
import os
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from niceeval._core.errors import ConfigError, caller_location, relative, user_location
from niceeval._core.failure import DEFAULT_INFRA_RETRIES
from niceeval._core.sandbox_kinds import SANDBOX_KINDS, SandboxDeclaration
from niceeval._core.settings import JudgeSettings, Price

__all__ = ["CONFIG_FILE", "Config", "JudgeSettings", "Price", "define_config", "find_root", "load_config"]

CONFIG_FILE = "niceeval.config.py"


class Config(BaseModel):
    """The project's settings. Every key is optional; a project without a config file gets these defaults."""

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)

    evals: list[str] = Field(default_factory=lambda: ["evals"])
    """Folders or files (relative to the project root) searched for evals when `niceeval run` gets no path."""
    concurrency: int = Field(default=8, ge=1)
    """How many runs execute at once."""
    timeout: float = Field(default=300.0, gt=0)
    """Seconds one run may take (an eval's own `timeout=` wins)."""
    judge: JudgeSettings = Field(default_factory=JudgeSettings)
    pricing: dict[str, Price] = Field(default_factory=dict)
    """Overrides of the built-in price table: exact `provider/model` keys or `provider/*`."""
    agent: Any = None
    """The agent under test: a function `message -> str` (sync or async) or an agent adapter."""
    fail_on_inconclusive: bool = False
    """Count inconclusive assertions (judge unavailable, no price) as misses."""
    variants: dict[str, Any] | None = None
    """Variants for every eval of the suite (`{"prompt": [...], "model": [...]}`); an eval's own `variants=` wins."""
    sandbox: Any = None
    """What runs sandbox evals' commands (`local`, `bwrap`, `docker`, or a declaration such as `docker_sandbox(...)`,
    also `per_variant(...)`); None: `bwrap` where it works, else `local`."""
    store: str | bool | None = None
    """Results store: a SQLite path or `postgresql://...` URL; `False` turns it off (default `.niceeval/results.db`)."""
    min_suite_pass_rate: float | None = Field(default=None, ge=0, le=1)
    """Suite gate: the share of cases (planned evals) that must pass; `--min-suite-pass-rate` wins."""
    min_mean: dict[str, float] = Field(default_factory=dict)
    """Suite gates: the least mean score per assertion name or kind (`{"rubric": 0.8}`); `--min-mean` adds."""
    infra_retries: int = Field(default=DEFAULT_INFRA_RETRIES, ge=0)
    """Times a run that failed for `infra` (provider outage, sandbox that did not start) runs again before it is
    reported, left out of the pass rate; `--infra-retries` wins."""
    stop_after_infra: int | None = Field(default=None, ge=1)
    """Stop the suite run after this many runs in a row failed for `infra`; `--stop-after-infra` wins."""
    classify_failure: Any = None
    """`(RunResult) -> "agent" | "infra" | "eval" | None`: reclassify a failed run (None keeps niceeval's class)."""
    root: Path = Field(default_factory=Path.cwd)
    """The project root: the folder holding `niceeval.config.py` (set by the loader)."""

    @field_validator("evals", mode="before")
    @classmethod
    def _one_path_is_a_list(cls, value: object) -> object:
        return [value] if isinstance(value, str) else value

    @field_validator("classify_failure")
    @classmethod
    def _a_hook(cls, value: object) -> object:
        if value is not None and not callable(value):
            raise ValueError(
                f"classify_failure is a function taking the failed RunResult and returning 'agent', 'infra', "
                f"'eval' or None; got {value!r:.80}"
            )
        return value

    @field_validator("sandbox")
    @classmethod
    def _a_sandbox(cls, value: object) -> object:
        problem = sandbox_problem(value)
        if problem is not None:
            raise ValueError(f"sandbox {problem}")
        return value


def sandbox_problem(value: object) -> str | None:
    """What is wrong with a `sandbox=` value, or None: a kind, a declaration, or `per_variant(...)` is right."""
    if value is None or value in SANDBOX_KINDS or isinstance(value, SandboxDeclaration):
        return None
    from niceeval.agents._runtime import PerVariant

    if isinstance(value, PerVariant):
        return None
    return (
        f"is one of {', '.join(SANDBOX_KINDS)}; got {value!r:.80}. A declaration (docker_sandbox(...) from "
        "niceeval.sandbox) or per_variant(lambda v: ...) returning one is taken too."
    )


def parse_judge(value: object, *, where: str) -> JudgeSettings | None:
    """Accept judge settings as a `JudgeSettings` or a dict; say which key is wrong otherwise."""
    if value is None or isinstance(value, JudgeSettings):
        return value
    try:
        return JudgeSettings.model_validate(value)
    except ValidationError as exc:
        raise ConfigError(f"{where}: {_explain(exc, JudgeSettings)}") from None


def _known_keys(model: type[BaseModel], loc: tuple[int | str, ...]) -> list[str]:
    """The keys the model at `loc` accepts (empty when `loc` goes through something else than a model)."""
    for part in loc[:-1]:
        field = model.model_fields.get(str(part))
        annotation = field.annotation if field is not None else None
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            return []
        model = annotation
    return [name for name in model.model_fields if name != "root"]  # `root` is set by the loader


def _unknown_key(key: str, known: list[str]) -> str:
    message = f"unknown key {key!r}; remove it or check its spelling"
    close = difflib.get_close_matches(key.rsplit(".", 1)[-1], known, n=1)
    if close:
        return f"{message}: did you mean {close[0]!r}?"
    return f"{message} (known keys: {', '.join(known)})" if known else message


def _explain(exc: ValidationError, model: type[BaseModel]) -> str:
    lines = []
    for error in exc.errors():
        key = ".".join(map(str, error["loc"])) or "(value)"
        if error["type"] == "extra_forbidden":
            lines.append(_unknown_key(key, _known_keys(model, error["loc"])))
        else:
            lines.append(f"{key}: {error['msg']} (got {error.get('input')!r})")
    return "; ".join(lines)


def define_config(**settings: Any) -> Config:
    """Build the project configuration in `niceeval.config.py` (assign it to `config`).

    Keys: `evals`, `concurrency`, `timeout`, `judge`, `pricing`, `agent`, `fail_on_inconclusive`, `variants`,
    `store`, `sandbox`, `min_suite_pass_rate`, `min_mean`, `infra_retries`, `stop_after_infra`, `classify_failure`.
    A wrong key or value raises a `ConfigError` naming the key and what to write instead.
    """
    where = caller_location(1) or CONFIG_FILE
    try:
        return Config.model_validate(settings)
    except ValidationError as exc:
        raise ConfigError(f"{where}: define_config(): {_explain(exc, Config)}") from None


def find_root(start: Path) -> Path:
    """The nearest folder at or above `start` holding `niceeval.config.py`, else `start`."""
    for folder in (start, *start.parents):
        if (folder / CONFIG_FILE).is_file():
            return folder
    return start


def load_config(root: Path, explicit: Path | None = None) -> Config:
    """Load `niceeval.config.py` from `root` (or `explicit`), loading `.env` credentials first."""
    _load_dotenv(root / ".env")
    path = explicit or root / CONFIG_FILE
    if not path.is_file():
        if explicit is not None:
            raise ConfigError(f"config file {relative(str(path))} does not exist; pass an existing file to --config.")
        return Config(root=root)
    spec = importlib.util.spec_from_file_location("niceeval_config", path)
    if spec is None or spec.loader is None:
        raise ConfigError(f"cannot load {relative(str(path))} as Python.")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(root))
    try:
        spec.loader.exec_module(module)
    except ConfigError:
        raise
    except SyntaxError as exc:
        raise ConfigError(f"{relative(str(path))}:{exc.lineno}: syntax error: {exc.msg}") from None
    except Exception as exc:
        where = user_location(exc.__traceback__) or relative(str(path))
        raise ConfigError(
            f"{where}: {relative(str(path))} raised {type(exc).__name__}: {exc}. Fix the config file."
        ) from None
    configs = [value for value in vars(module).values() if isinstance(value, Config)]
    if not configs:
        raise ConfigError(f"{relative(str(path))} defines no configuration; write `config = define_config(...)` in it.")
    return configs[0].model_copy(update={"root": root})


def _load_dotenv(path: Path) -> None:
    """Put credentials from `.env` into the environment without overriding what is already set."""
    if not path.is_file():
        return
    from dotenv import dotenv_values

    for key, value in dotenv_values(path).items():
        if value is not None and key not in os.environ:
            os.environ[key] = value
