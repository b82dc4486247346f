"""Claude Code and Codex as the agents under test, offline: the real CLIs, a scripted local model.

Runs in the bubblewrap sandbox where bwrap works (the CLIs reach only the local model), locally elsewhere.
"""

from niceeval import define_config

config = define_config(concurrency=2, timeout=180)
