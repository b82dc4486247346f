"""`niceeval init`: a starter config and one eval that pass offline."""

from __future__ import annotations

from pathlib import Path

CONFIG = '''\
"""niceeval configuration. Every key is optional."""

from niceeval import define_config


def agent(message: str) -> str:
    """The agent under test. Replace with your app, or an adapter from niceeval.agents."""
    return f"Hello! You said: {message}"


config = define_config(
    agent=agent,
    evals=["evals"],
    concurrency=8,
    timeout=120,
)
'''

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
    """Write the starter files that do not exist yet; return what was done, one line each."""
    done = []
    for path, text in ((folder / "niceeval.config.py", CONFIG), (folder / "evals" / "first.py", EVAL)):
        if path.exists():
            done.append(f"kept {path.relative_to(folder)} (already exists)")
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        done.append(f"wrote {path.relative_to(folder)}")
    done.append("next: niceeval run")
    return done
