"""`ScriptedModel`: the same scripts and replies in process, with no HTTP, for fast logic tests."""

from __future__ import annotations

import anyio

from niceeval._core.errors import NiceevalError
from niceeval.testing._replies import Fault, Reply
from niceeval.testing._request import LLMRequest
from niceeval.testing._script import FaultRule, Script, Scripted


class InjectedFaultError(NiceevalError):
    """Raised by `ScriptedModel.complete()` for a scripted fault (other than a hang).

    Attributes:
        fault: The fault that was scripted.
    """

    def __init__(self, fault: Fault) -> None:
        what = f"HTTP {fault.status}: {fault.message}" if fault.kind == "error" else fault.kind
        super().__init__(f"injected fault ({what})")
        self.fault = fault


class ScriptedModel(Scripted):
    """A model that answers from a script in process: no server, no SDK, no network.

    It takes the same scripts, replies and faults as `LLMServer`:

        model = ScriptedModel(["Paris", ToolCall(name="lookup", arguments={"q": "France"})])
        reply = await model.complete("Capital of France?")
        assert reply.text == "Paris"

    Args:
        script: A list of replies served first to last, or a function (sync or async) of the request.
        faults: A rule returning a `Fault` to inject for a request, or `None`; see `fail_first()`.
        latency: Seconds to wait before every answer.
    """

    def __init__(self, script: Script | None = None, *, faults: FaultRule | None = None, latency: float = 0.0) -> None:
        super().__init__(script, faults=faults, latency=latency)

    async def complete(self, request: LLMRequest | str) -> Reply:
        """Answer one request with the next scripted reply.

        Args:
            request: The request, or a prompt (one user message).

        Returns:
            The reply with every tool call given an id and `usage` filled in (estimated unless scripted).

        Raises:
            InjectedFaultError: The reply is a fault; a `hang` fault instead waits until cancelled.
            ScriptExhaustedError: The script ran out of replies.
        """
        if isinstance(request, str):
            request = LLMRequest.from_prompt(request)
        self._runner.record(request)
        await anyio.sleep(self._runner.latency)
        reply = await self._runner.next_reply(request)
        await anyio.sleep(reply.latency)
        if reply.fault is not None:
            if reply.fault.kind == "hang":
                await anyio.sleep_forever()
            raise InjectedFaultError(reply.fault)
        return self._runner.resolve(reply, request, call_prefix="call_")
