"""The coding-agent example: a sandbox eval scored by its diff, commands and a hidden EVAL.py."""

from niceeval import define_config

config = define_config(concurrency=2, timeout=120)
