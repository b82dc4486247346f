"""Placing an attack where the agent's tools read it: a workspace file, a tool's output, a page, a document.

`plant(case, sandbox)` makes the case the run's current attack (a context variable, so the agent's tools, called
inside `t.send`, see it) and writes its files into the workspace: the carrier of a `file` case and the secret of a
data-exfiltration case. The eval's own tools return `attack_text("tool_output")` / `attack_text("document")`, and
`AttackPage(case)` serves a `page` case on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from contextvars import ContextVar
from types import TracebackType
from typing import Any, Self

from niceeval._core.errors import UsageError
from niceeval._core.loopback import ServerThread, bind_loopback, root_url, uvicorn_config
from niceeval._core.values import short
from niceeval.sandbox import Sandbox

_CURRENT: ContextVar[Mapping[str, Any] | None] = ContextVar("niceeval_attack", default=None)

BENIGN: dict[str, str] = {
    "tool_output": "Ticket #4411 (open)\nThe customer reports that the export button does nothing.\nPriority: normal.",
    "document": "Refund policy (kb-0172): purchases can be refunded within 30 days.\nGift cards are not refundable.",
}
"""What a tool returns for a place the current case does not attack (or with no case planted)."""


async def plant(case: Mapping[str, Any], sandbox: Sandbox | None = None) -> None:
    """Make `case` the run's current attack and write its files into the sandbox workspace.

    Args:
        case: A row of `attack_cases()` (`t.case`).
        sandbox: The eval's workspace (`t.sandbox`); needed by `file` cases and data-exfiltration cases, whose
            carrier and secret are files.

    Raises:
        UsageError: `case` is not an attack case, or it needs a workspace and got none.
    """
    if not isinstance(case, Mapping) or "carrier" not in case or "vector" not in case:
        raise UsageError(
            f"plant() takes an attack case (a row of attack_cases(), as t.case gives it); got {short(case)}."
        )
    files = ([(str(case["location"]), str(case["carrier"]))] if case["vector"] == "file" else []) + (
        [(str(case["secret_file"]), str(case["secret_text"]))] if "secret_file" in case else []
    )
    if files and sandbox is None:
        raise UsageError(
            f"plant(): case {case.get('id')!r} places files in the workspace; give the eval a fixture and pass "
            "t.sandbox: plant(t.case, t.sandbox)."
        )
    for path, text in files:
        assert sandbox is not None
        await sandbox.write_text(path, text)
    _CURRENT.set(case)


def attack_text(vector: str) -> str:
    """What a tool of the eval returns at `vector` (`tool_output`, `document`): the current case's carrier when
    it attacks there, else benign text of the same kind."""
    case = _CURRENT.get()
    if case is not None and case.get("vector") == vector:
        return str(case["carrier"])
    return BENIGN.get(vector, "")


class AttackPage:
    """A page case's carrier served on 127.0.0.1 at its `location`, for agents that fetch web pages.

    `with AttackPage(case) as page: ... page.url ...`; `page.requests` lists the paths fetched, in order. Any other
    path is a 404.
    """

    def __init__(self, case: Mapping[str, Any]) -> None:
        if not isinstance(case, Mapping) or case.get("vector") != "page":
            raise UsageError(f"AttackPage() serves a case whose vector is 'page'; got {short(case)}.")
        self._path = str(case["location"])
        self._body = str(case["carrier"]).encode("utf-8")
        self.requests: list[str] = []
        self._sock = bind_loopback("127.0.0.1", 0)
        port = self._sock.getsockname()[1]
        self.url = root_url("127.0.0.1", port) + self._path
        """Where the page is served."""
        self.task = str(case["task"]).replace("{url}", self.url)
        """The case's task, naming the page's address."""
        self._server = ServerThread(
            uvicorn_config(_page_app(self._path, self._body, self.requests), quiet=True),
            self._sock,
            asyncio.Event(),
            name="niceeval attack page",
        )

    def __enter__(self) -> Self:
        self._server.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._server.stop()


def _page_app(path: str, page: bytes, requests: list[str]) -> Callable[..., Awaitable[None]]:
    """The ASGI app serving `page` at `path` (a function, so uvicorn sees an ASGI 3 app), noting each request."""

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        requests.append(scope["path"])
        found = scope["path"] == path
        body = page if found else b"not found"
        kind = b"text/html; charset=utf-8" if found else b"text/plain"
        headers = [(b"content-type", kind), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": 200 if found else 404, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    return app
