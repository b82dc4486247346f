"""The judge's door for the runner: everything `niceeval run`, `rescore`, `--dry-run`, select-best and the pytest
plugin need to wire a run's judge, and nothing else. Other packages import these names from here (or the public
ones from `niceeval.judge`), never from the judge's other modules.

- `JudgeClients`, `JudgeCache`, `default_cache_path`, `CacheMode`: what a suite's judges share (SDK clients and
  the verdict cache), opened once per suite; `CallGate`, `CallRefused`: what may admit each request (a budget).
- `JudgeRuntime`, `JudgeSession`: one run's judge, built from what the runner provides; `session.judge` is `t.judge`.
- `Env`, `select_best`, `Choice`: the select-best comparison, asked once over every variant of a case.
- `as_text`: how a value is shown to a judge (a comparison's output is recorded the same way).
- `estimated_cost`: what judge calls may cost at most, from the prompt's cap and the model's price (`--dry-run`).
- `ask`, `Request`, `CachedVerdict`: one structured request over the suite's clients, and a stored answer, for
  the other models niceeval asks for an eval (the simulated user of `niceeval.simulation`) through the same
  clients and cache file.
"""

from niceeval.judge._cache import CachedVerdict, CacheMode, JudgeCache, default_cache_path
from niceeval.judge._client import CallGate, CallRefused, JudgeClients, Request, ask
from niceeval.judge._engine import Env, estimated_cost
from niceeval.judge._judge import JudgeRuntime, JudgeSession
from niceeval.judge._prompts import as_text
from niceeval.judge._select import Choice, select_best

__all__ = [
    "CacheMode",
    "CachedVerdict",
    "CallGate",
    "CallRefused",
    "Choice",
    "Env",
    "JudgeCache",
    "JudgeClients",
    "JudgeRuntime",
    "JudgeSession",
    "Request",
    "as_text",
    "ask",
    "default_cache_path",
    "estimated_cost",
    "select_best",
]
