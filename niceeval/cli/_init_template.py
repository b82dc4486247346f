"""`niceeval init`: a starter config and one eval that pass offline, and `.niceeval/.gitignore`."""

from __future__ import annotations

from pathlib import Path

CONFIG = '''\
"""niceeval configuration. Every key is optional."""

from niceeval import define_config


def agent(message: str) -> str:
    """The agent under test: replace the body with a call into your app (sync or async, message in, reply out).

    Or pass an adapter from niceeval.agents instead of this function: openai_agent("openai/gpt-5-mini",
    system=..., tools=[...]), anthropic_agent(...), or http_agent(url) for a running service.
    """
    return f"Hello! You said: {message}"


config = define_config(
    agent=agent,
    evals=["evals"],
    concurrency=8,
    timeout=120,
    # judge={"model": "openai/gpt-5.4-mini"},  # the model behind t.judge (needs OPENAI_API_KEY; docs/judge.md)
)
'''

GITIGNORE = """\
# niceeval's local data: the results store (results.db), the price memo (prices.json) and scratch files stay out
# of git.
*
!.gitignore
# The judge cache replays judged suites in CI with --cache-only and no API key (docs/judge.md): commit it.
!judge-cache.sqlite
"""

EVAL = '''\
"""A first eval: send a message, check the reply."""

import re

from niceeval import define_eval
from niceeval.expect import includes, similarity


@define_eval(tags=["starter"])
async def greets_back(t):
    await t.send("hi there")
    t.check(t.reply, includes("Hello"))                                 # gate: must hold
    t.check(t.reply, includes(re.compile(r"said: hi")))                  # regexes work too
    t.check(t.reply, similarity("Hello! You said: hi there").at_least(0.8))  # soft, scored 0..1
'''


def write_starter(folder: Path) -> list[str]:
    """Write the starter files that do not exist yet; return what was done and the next steps, one line each."""
    done, wrote = [], []
    files = (
        (folder / "niceeval.config.py", CONFIG),
        (folder / "evals" / "first.py", EVAL),
        (folder / ".niceeval" / ".gitignore", GITIGNORE),
    )
    for path, text in files:
        if path.exists():
            done.append(f"kept {path.relative_to(folder)} (already exists)")
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        done.append(f"wrote {path.relative_to(folder)}")
        wrote.append(path.name)
    starter = {"niceeval.config.py", "first.py"} <= set(wrote)
    agent_at = f"niceeval.config.py:{_line_of(CONFIG, 'def agent')}" if "niceeval.config.py" in wrote else None
    return [*done, *next_steps(agent_at, starter=starter)]


def next_steps(agent_at: str | None, *, starter: bool) -> list[str]:
    """What to do after `niceeval init`: run (the starter passes offline), then a key, the real agent, the viewer.

    `agent_at`: `file:line` of the starter agent (None when the config was already there); `starter`: both
    starter files were written, so the suite passes as it is.
    """
    agent = f"edit `def agent` at {agent_at}" if agent_at else "set `agent=` in niceeval.config.py"
    run = "The starter eval passes now, offline" if starter else "Run the evals"
    return [
        "",
        f"{run}: niceeval run (or pytest evals/).",
        "Next:",
        "  1. Set a key for model agents and judges: OPENAI_API_KEY (or ANTHROPIC_API_KEY) in the environment,",
        "     or in a .env file beside niceeval.config.py (keep it out of git).",
        f"  2. Point the agent at your app: {agent}, or use an adapter from",
        "     niceeval.agents (openai_agent, anthropic_agent, http_agent).",
        "  3. Browse the results: niceeval view",
    ]


def _line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), start=1) if line.startswith(needle))
