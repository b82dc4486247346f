"""Scopes: the assertions of `t` over one turn (`turn = await t.send(...)`) or one session (`t.session`).

A turn or a session registers its assertions with the eval that made it (its `ScopeHost`, given to the
conversation when the context builds it); they are scored after the eval returns, over only that scope's events,
and reports name the scope: `turn 2: called_tool('search')`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from niceeval._core.assertion import Matcher, grouped
from niceeval._core.awaits import CURRENT_TRACKER, AwaitTracker
from niceeval._core.errors import UsageError, caller_location
from niceeval._core.settings import Price
from niceeval._core.values import short
from niceeval._eval.checks import Check, Checks
from niceeval._eval.observe import EventAssertions, EventSelector, Scoped
from niceeval._eval.run_judge import RunJudge


@dataclass(kw_only=True, slots=True)
class ScopeHost:
    """What a turn or a session needs from the eval that made it: the parts of its context they record with.

    None of them refers back to the context or to a conversation, so turns kept by the eval hold no cycle.
    Built once per run and never changed; not frozen only because a frozen dataclass is slower to build.
    """

    eval_id: str
    checks: Checks
    """Records `turn.check(...)` as `t.check` records a check."""
    scoped: list[Scoped]
    """Where the scope's assertions are registered (scored after the eval returns)."""
    judge: RunJudge
    """The run's judge, for `turn.judge`."""
    pricing: Mapping[str, Price]
    """The config's price overrides, for `turn.max_cost(...)` and `turn.max_tokens(...)`."""
    awaits: AwaitTracker
    """The run's await tracker: which eval a scope belongs to (a turn kept from another eval is refused)."""


_NOT_BOUND = (
    "{what} works on turns and sessions of a running eval: use the turn `await t.send(...)` returned, or t.session."
)


class ScopeAssertions(EventAssertions):
    """`called_tool`, `check`, `judge`, ... on a turn or a session: each over only that scope's events."""

    __slots__ = ()

    def _scope_host(self) -> ScopeHost | None:
        raise NotImplementedError

    def _scope_label(self) -> str:
        raise NotImplementedError

    def _scope_select(self) -> EventSelector:
        raise NotImplementedError

    def _scope_reply(self) -> tuple[str, str | None]:
        """The reply judged and checked by default, and what the user asked for it."""
        raise NotImplementedError

    def _bound_host(self, what: str) -> ScopeHost:
        host = self._scope_host()
        if host is None:
            raise UsageError(_NOT_BOUND.format(what=what))
        running = CURRENT_TRACKER.get()
        if running is not None and running is not host.awaits:
            raise UsageError(
                f"{what} at {caller_location(2)}: this {self._scope_label()} belongs to another eval "
                f"({host.eval_id}); a turn's or session's assertions work only in the eval that made it. "
                "Send the message again in this eval and assert on the turn it returns."
            )
        return host

    def _prices(self) -> Mapping[str, Price]:
        return self._bound_host("a scoped assertion").pricing

    def _register(self, matcher: Matcher) -> Scoped:
        host = self._bound_host(f"{self._scope_label()}.{matcher.name.split('(', 1)[0]}()")
        handle = Scoped(matcher, caller_location(2), scope=self._scope_label(), select=self._scope_select())
        host.scoped.append(handle)
        return handle

    def check(self, value: Any, matcher: Matcher | None = None, /) -> Check:
        """Score a value of this scope and record it, named by the scope: `turn.check(includes("refund"))`.

        With one argument the value is this scope's reply; with two, `turn.check(value, matcher)`.
        """
        return self._scoped_check(value, matcher, required=False)

    def require(self, value: Any, matcher: Matcher | None = None, /) -> Check:
        """Like `check`, but a miss stops the eval (as a failed gate)."""
        return self._scoped_check(value, matcher, required=True)

    def _scoped_check(self, value: Any, matcher: Matcher | None, *, required: bool) -> Check:
        verb = "require" if required else "check"
        host = self._bound_host(f"{self._scope_label()}.{verb}()")
        if matcher is None and isinstance(value, Matcher):
            value, matcher = self._scope_reply()[0], value
        if not isinstance(matcher, Matcher):
            raise UsageError(
                f"{verb}() at {caller_location(2)} on a {self._scope_label()} takes a matcher, got {short(matcher)}: "
                f"write turn.{verb}(includes('refund')) for its reply, or turn.{verb}(value, matcher)."
            )
        named = matcher._chained(name=f"{self._scope_label()}: {matcher.name}")
        return host.checks.record(value, named, caller_location(2), required=required, verb=verb)

    @property
    def judge(self) -> ScopedJudge:
        """`t.judge`, judging this scope's reply (and shown what was asked for it) unless told otherwise."""
        host = self._bound_host(f"{self._scope_label()}.judge")
        reply, asked = self._scope_reply()
        return ScopedJudge(host.judge.get(), label=self._scope_label(), on=reply, asked=asked)


class ScopedJudge:
    """A judge whose calls default to a turn's or session's reply and name the scope in reports."""

    __slots__ = ("_target", "_label", "_on", "_asked")

    def __init__(self, target: Any, *, label: str, on: str, asked: str | None) -> None:
        self._target = target
        self._label = label
        self._on = on
        self._asked = asked

    def __getattr__(self, name: str) -> Any:
        found = getattr(self._target, name)
        if name == "autoevals":
            return ScopedJudge(found, label=self._label, on=self._on, asked=self._asked)
        if not callable(found):
            return found
        return self._bind(found)

    def _bind(self, method: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            kwargs.setdefault("on", self._on)
            kwargs.setdefault("input", self._asked)
            handle = method(*args, **kwargs)
            if hasattr(handle, "name"):
                groups = grouped("")  # the judge named it inside the eval's t.group blocks: the scope goes after
                handle.name = f"{groups}{self._label}: {handle.name.removeprefix(groups)}"
            return handle

        return call
