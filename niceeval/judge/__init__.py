"""LLM-as-judge: `t.judge` assertions over the OpenAI and Anthropic SDKs, with fallback, cache and cost.

Eval authors reach it as `t.judge` (a `Judge`); see docs/judge.md. The runner builds a `JudgeSession` per run
from a `JudgeRuntime`, shares one `JudgeClients` and one `JudgeCache` across the suite, records
`session.results()` before folding, and sums costs with `judge_spend`.
"""

from niceeval._core.assertion import JudgeCall
from niceeval.judge._cache import CachedVerdict, CacheMode, JudgeCache, default_cache_path
from niceeval.judge._client import JudgeClients
from niceeval.judge._handle import JudgeHandle
from niceeval.judge._judge import Autoevals, Judge, JudgeRuntime, JudgeSession
from niceeval.judge._spend import JudgeSpend, judge_spend

__all__ = [
    "Autoevals",
    "CacheMode",
    "CachedVerdict",
    "Judge",
    "JudgeCache",
    "JudgeCall",
    "JudgeClients",
    "JudgeHandle",
    "JudgeRuntime",
    "JudgeSession",
    "JudgeSpend",
    "default_cache_path",
    "judge_spend",
]
