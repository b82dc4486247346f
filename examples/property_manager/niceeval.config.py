"""The property-management example: offline by default; with OPENAI_API_KEY set, the evals drive a model."""

from niceeval import define_config

config = define_config(concurrency=4, timeout=120)
