"""`provider/model` strings, parsed, and the providers niceeval has clients for."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from niceeval._core.errors import UsageError

Provider = Literal["openai", "anthropic"]
PROVIDERS: dict[str, tuple[str, str]] = {
    # provider: (API key variable, base URL variable)
    "openai": ("OPENAI_API_KEY", "OPENAI_BASE_URL"),
    "anthropic": ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"),
}


@dataclass(frozen=True, slots=True)
class ModelRef:
    """A `provider/model` string, parsed."""

    provider: Provider
    name: str

    def __str__(self) -> str:
        return f"{self.provider}/{self.name}"


def parse_model(model: str) -> ModelRef:
    """Parse `provider/model`; say what to write when it is malformed or the provider is unknown.

    Raises:
        UsageError: when `model` has no provider prefix or names a provider niceeval has no client for.
    """
    if not isinstance(model, str) or "/" not in model:
        raise UsageError(
            f"model {model!r} needs a provider prefix, e.g. 'openai/gpt-5-mini' or 'anthropic/claude-haiku-4-5'."
        )
    provider, name = model.split("/", 1)
    if provider not in PROVIDERS or not name:
        raise UsageError(f"unknown provider {provider!r} in model {model!r}; known providers: {', '.join(PROVIDERS)}.")
    return ModelRef(provider=provider, name=name)  # type: ignore[arg-type]
