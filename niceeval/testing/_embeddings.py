"""`POST /v1/embeddings` of the local server: deterministic vectors, so similarity checks run offline.

Each text becomes a bag of its lower-cased words hashed into `DIMENSIONS` buckets, normalised: the same text has
cosine 1.0 with itself, texts sharing words score high and unrelated texts near 0. Not a language model; enough to
test code that calls an embeddings endpoint and compares vectors.
"""

from __future__ import annotations

import hashlib
import math
import re
from typing import Any

DIMENSIONS = 64
_WORD = re.compile(r"\w+")


def vector(text: str) -> list[float]:
    """The deterministic embedding of `text`."""
    buckets = [0.0] * DIMENSIONS
    for word in _WORD.findall(text.lower()):
        digest = hashlib.sha256(word.encode("utf-8")).digest()
        buckets[digest[0] % DIMENSIONS] += 1.0 if digest[1] % 2 else -1.0
    norm = math.sqrt(sum(x * x for x in buckets))
    return [x / norm for x in buckets] if norm else buckets


def embeddings_body(body: dict[str, Any]) -> dict[str, Any] | str:
    """The OpenAI embeddings response for a request body, or what is wrong with the body."""
    given = body.get("input")
    texts = [given] if isinstance(given, str) else given
    if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
        return "`input` must be a string or a non-empty list of strings"
    tokens = sum(len(_WORD.findall(text)) for text in texts)
    return {
        "object": "list",
        "data": [{"object": "embedding", "index": i, "embedding": vector(text)} for i, text in enumerate(texts)],
        "model": str(body.get("model", "scripted")),
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }
