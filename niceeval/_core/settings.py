"""Settings types shared by features and the eval layer: judge settings and model prices.

They sit below every feature (the judge prices its calls, `_pricing` reads price tables, the eval layer and the
config hold them), so no feature has to reach up into `_eval` for them.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class JudgeSettings(BaseModel):
    """Which model judges, and how strictly, by default."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str | None = None
    """`provider/model`, e.g. `openai/gpt-5.4-mini`."""
    fallback: str | None = None
    """Used when the primary model is still unavailable after retries."""
    embedding_model: str | None = None
    """`openai/...` model of `t.judge.similar` (an OpenAI-compatible `/embeddings`); `openai/text-embedding-3-small`
    when unset."""
    default_threshold: float | None = Field(default=None, ge=0.0, le=1.0)
    """Threshold of a judge assertion that does not say `.at_least(x)`. Unset: 0.7 for judges that only give a
    score (`autoevals.*`, `g_eval`), none for `rubric` and `vote` voters (the judge's pass decides). Set: every
    judge, a rubric then needing both its pass and the score."""
    timeout: float = Field(default=60.0, gt=0)
    """Seconds per judge call."""
    max_retries: int = Field(default=4, ge=0)
    """Retries of a judge request after a 429, a 5xx, a timeout or a connection error (0: ask once)."""
    samples: int = Field(default=1, ge=1, le=100)
    """How many times each judge call asks the judge on the same output (`--judge-samples K`; a call's
    `samples=` wins): the score is the samples' mean, and a verdict they do not settle is `unstable`."""
    max_chars: int = Field(default=100_000, ge=1)
    """The most characters one judge prompt holds (a call's `max_chars=` wins): longer data is cut in the middle,
    and the prompt and the assertion's reason say how much (docs/judge.md, "What a judge is sent")."""


class Price(BaseModel):
    """USD per million tokens for one model."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input_per_mtok: float = Field(ge=0)
    output_per_mtok: float = Field(ge=0)
    cache_read_per_mtok: float | None = Field(default=None, ge=0)
