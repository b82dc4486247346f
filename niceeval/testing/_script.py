"""Scripts: the queue or function picking each reply, fault rules, and the bookkeeping both servers share."""

from __future__ import annotations

import inspect
import itertools
import json
import math
import threading
from collections import deque
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import TypeAlias

from niceeval._core.errors import NiceevalError, UsageError
from niceeval.testing._replies import Fault, Reply, ReplyLike, TokenUsage, as_reply
from niceeval.testing._request import LLMRequest

ScriptFunction: TypeAlias = Callable[[LLMRequest], ReplyLike | Awaitable[ReplyLike]]
"""A function (sync or async) from the request to its reply."""

Script: TypeAlias = Sequence[ReplyLike] | ScriptFunction
"""Either a list of replies, served first to last, or a function of the request."""

FaultRule: TypeAlias = Callable[[LLMRequest], Fault | None | Awaitable[Fault | None]]
"""A function (sync or async) from the request to a fault to inject, or `None` to let it through."""


class ScriptExhaustedError(NiceevalError):
    """A request arrived after the scripted queue of replies was used up."""


def fail_first(n: int, fault: Fault | None = None) -> FaultRule:
    """A fault rule that fails the first `n` requests, then lets every request through.

    Args:
        n: How many requests to fail.
        fault: The fault to answer them with; by default `Fault.rate_limit()` (429, `Retry-After: 0.01`).

    Returns:
        A rule to pass as `faults=`. Faulted requests do not use up scripted replies.
    """
    if n < 0:
        raise UsageError(f"fail_first(n) needs n >= 0, got {n}")
    chosen = fault if fault is not None else Fault.rate_limit()
    seen = itertools.count(1)

    def rule(request: LLMRequest) -> Fault | None:
        return chosen if next(seen) <= n else None

    return rule


def echo(request: LLMRequest) -> Reply:
    """A script function that answers with the text of the last user message."""
    return Reply(text=request.last_user_text)


def estimate_tokens(text: str) -> int:
    """A deterministic stand-in for a tokenizer: one token per four characters, at least one."""
    return max(1, math.ceil(len(text) / 4))


class ScriptRunner:
    """Picks the reply for each request and records the requests; shared by `LLMServer` and `ScriptedModel`.

    The queue and the request log are read and written from the caller's thread and from the server's
    thread, hence the lock.
    """

    def __init__(
        self, script: Script | None, *, faults: FaultRule | None, latency: float, keep_requests: bool = True
    ) -> None:
        """`keep_requests`: keep each request for `requests` (False: count them only, as a long-lived server that
        nobody reads the log of must, or its memory grows with every request it answers)."""
        self._lock = threading.Lock()
        self._queue: deque[Reply] = deque()
        self._function: ScriptFunction | None = None
        self._served = 0
        self._requests: list[LLMRequest] = []
        self._received = 0
        self._keep = keep_requests
        self._ids: dict[str, Iterator[int]] = {}
        self.faults = faults
        self.latency = latency
        self.set_script(script)

    @property
    def latency(self) -> float:
        """Seconds added before every answer."""
        return self._latency

    @latency.setter
    def latency(self, seconds: float) -> None:
        if seconds < 0:
            raise UsageError(f"latency is a number of seconds >= 0, got {seconds}")
        self._latency = seconds

    def set_script(self, script: Script | None) -> None:
        """Replace the script (and drop any queued replies not served yet)."""
        if script is None or (isinstance(script, Sequence) and not isinstance(script, str)):
            replies = _compile(script or [])
            with self._lock:
                self._function, self._queue, self._served = None, deque(replies), 0
        elif callable(script):
            with self._lock:
                self._function, self._queue, self._served = script, deque(), 0
        else:
            raise UsageError(
                f"a script is a list of replies or a function of the request, not {type(script).__name__}; "
                "wrap a single reply in a list: script=[...]"
            )

    def push(self, *items: ReplyLike) -> None:
        """Append replies to the queue."""
        replies = _compile(items)
        with self._lock:
            if self._function is not None:
                raise UsageError("push() adds to a list script, but this script is a function; use set_script()")
            self._queue.extend(replies)

    @property
    def remaining(self) -> int | None:
        """How many queued replies are left; `None` when the script is a function."""
        with self._lock:
            return None if self._function is not None else len(self._queue)

    @property
    def requests(self) -> list[LLMRequest]:
        """A copy of the requests received so far, oldest first."""
        with self._lock:
            return list(self._requests)

    def record(self, request: LLMRequest) -> None:
        """Add a request to the log (count it, when requests are not kept)."""
        with self._lock:
            self._received += 1
            if self._keep:
                self._requests.append(request)

    async def next_reply(self, request: LLMRequest) -> Reply:
        """The reply to `request`: the fault rule's fault if it gives one, else the script's next reply.

        Raises:
            ScriptExhaustedError: The queue is empty.
        """
        if self.faults is not None:
            fault = self.faults(request)
            if inspect.isawaitable(fault):
                fault = await fault
            if fault is not None:
                return Reply(fault=fault)
        with self._lock:
            function = self._function
            if function is None:
                if not self._queue:
                    raise ScriptExhaustedError(self._exhausted_message(request))
                self._served += 1
                return self._queue.popleft()
        item = function(request)
        if inspect.isawaitable(item):
            item = await item
        return as_reply(item)

    def resolve(self, reply: Reply, request: LLMRequest, *, call_prefix: str) -> Reply:
        """The reply with every tool call given an id and the usage filled in (estimated if not scripted)."""
        calls = [c if c.id else c.model_copy(update={"id": self.new_id(call_prefix)}) for c in reply.tool_calls]
        usage = reply.usage or TokenUsage(
            input_tokens=count_input_tokens(request),
            output_tokens=estimate_tokens(_reply_text(reply)),
        )
        return reply.model_copy(update={"tool_calls": calls, "usage": usage})

    def new_id(self, prefix: str) -> str:
        """The next id with this prefix: `call_0001`, `call_0002`, ... (deterministic, for assertions)."""
        with self._lock:
            counter = self._ids.setdefault(prefix, itertools.count(1))
            return f"{prefix}{next(counter):04d}"

    def _exhausted_message(self, request: LLMRequest) -> str:
        held = f"all {self._served} scripted replies were used" if self._served else "it holds no replies"
        return (
            f"niceeval LLM script ran out of replies: {held}, "
            f"and request #{self._received} ({request.provider}, model {request.model!r}, last user "
            f"message {_clip(request.last_user_text)!r}) has none left. Script one more reply per request "
            "(push() or a longer list), or use a function of the request to answer any number of them."
        )


class Scripted:
    """What `LLMServer` and `ScriptedModel` share: the script they answer from, and the requests it has seen."""

    def __init__(self, script: Script | None, *, faults: FaultRule | None, latency: float) -> None:
        self._runner = ScriptRunner(script, faults=faults, latency=latency)

    @property
    def requests(self) -> list[LLMRequest]:
        """The requests received so far, oldest first (a copy), faulted ones included."""
        return self._runner.requests

    @property
    def remaining(self) -> int | None:
        """How many scripted replies are left in the queue; `None` when the script is a function."""
        return self._runner.remaining

    def push(self, *replies: ReplyLike) -> None:
        """Append replies to the scripted queue.

        Raises:
            UsageError: The script is a function, not a list.
        """
        self._runner.push(*replies)

    def set_script(self, script: Script | None) -> None:
        """Replace the script: a list of replies or a function of the request (drops unserved replies)."""
        self._runner.set_script(script)


def count_input_tokens(request: LLMRequest) -> int:
    """The estimated prompt size of a request (what unscripted usage and `count_tokens` report)."""
    return estimate_tokens(_request_text(request))


def _compile(items: Sequence[ReplyLike]) -> list[Reply]:
    replies = []
    for position, item in enumerate(items):
        try:
            replies.append(as_reply(item))
        except (TypeError, ValueError) as exc:
            raise UsageError(f"script item {position}: {exc}") from exc
    return replies


def _request_text(request: LLMRequest) -> str:
    parts = [m.content for m in request.messages]
    parts += [json.dumps(c.arguments) for m in request.messages for c in m.tool_calls]
    return "\n".join(parts)


def _reply_text(reply: Reply) -> str:
    parts = [reply.content or ""]
    parts += [c.name + json.dumps(c.arguments) for c in reply.tool_calls]
    return "".join(parts)


def _clip(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
