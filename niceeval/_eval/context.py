"""The eval context `t`: what an eval function uses to talk to the agent and record assertions."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Coroutine, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

from anyio.abc import TaskGroup
from anyio.from_thread import BlockingPortal

from niceeval._core.assertion import CURRENT_GROUP, AssertionResult, Matcher, ScoreLike, grouped
from niceeval._core.awaits import AwaitTracker, tracked
from niceeval._core.errors import ErrorInfo, UsageError, caller_location, error_info
from niceeval._core.events import Event, EventLog
from niceeval._core.settings import Price
from niceeval._core.spans import Span
from niceeval._core.values import short
from niceeval._eval.case_checks import CaseChecks
from niceeval._eval.checks import Check as Check  # re-exported: the context is where users meet them
from niceeval._eval.checks import RequireFailed as RequireFailed
from niceeval._eval.checks import Skipped as Skipped
from niceeval._eval.checks import StopEval as StopEval
from niceeval._eval.compare import Comparison
from niceeval._eval.conversation import Conversation, Message, Session, Turn, split_chat
from niceeval._eval.efficiency import Usage, usage_of
from niceeval._eval.observe import Observations, Scoped
from niceeval._eval.scopes import ToolCall, tool_calls_of
from niceeval._eval.spanmatch import SpanAssertions
from niceeval._eval.variants import Variant
from niceeval.agents import Attachment
from niceeval.agents._runtime import load_attachments

if TYPE_CHECKING:
    from niceeval.judge import Judge
    from niceeval.sandbox import Sandbox

T = TypeVar("T")


@dataclass(kw_only=True)
class RunState:
    """Everything one run accumulates; the runner folds it into a `RunResult`."""

    assertions: list[AssertionResult] = field(default_factory=list)
    log: EventLog = field(default_factory=EventLog)
    pending_requires: list[Check] = field(default_factory=list)
    skip_reason: str | None = None
    scoped: list[Scoped] = field(default_factory=list)
    diff_scoped: list[Scoped] = field(default_factory=list)
    span_scoped: list[Scoped] = field(default_factory=list)
    """`t.span(...)` and the other span assertions, scored over the run's trace (`log.spans`)."""
    usage_error: ErrorInfo | None = None
    """An author bug found inside a background check (it cannot raise into the eval function)."""
    workspace_diff: str | None = None
    """A sandbox eval's workspace diff as text, kept for the record."""
    warnings: list[str] = field(default_factory=list)
    """Problems that did not change the outcome but deserve attention (the loop watchdog's, for one)."""
    awaits: AwaitTracker = field(default_factory=AwaitTracker)
    """Coroutines the API handed to the eval, checked for an `await` once it returns."""
    comparisons: list[Comparison] = field(default_factory=list)
    """`t.max_score` / `t.select_best`: resolved by the runner once every variant of the case has run."""


_NO_VALUE: Any = object()
"""`t.check()` called without the value to score."""


def _needs_value(value: object, verb: str) -> None:
    if value is _NO_VALUE:
        raise UsageError(
            f"t.{verb}() needs the value to score and a matcher, e.g. t.{verb}(t.reply, includes('refund'))."
        )


class ContextBase(Observations, SpanAssertions, CaseChecks):
    """What sync and async eval contexts share: checks, skip, the reply, the event stream, scoped assertions."""

    def __init__(
        self,
        *,
        state: RunState,
        task_group: TaskGroup,
        agent: object,
        eval_id: str,
        pricing: Mapping[str, Price] | None = None,
        followup_model: str | None = None,
    ) -> None:
        self._state = state
        self._tg = task_group
        self._agent_spec = agent
        self._eval_id = eval_id
        self._scoped = state.scoped
        self._comparisons = state.comparisons
        self._diff_scoped = state.diff_scoped
        self._span_scoped = state.span_scoped
        self._sandbox: Sandbox | None = None
        self._case: Any = None
        self._variant: Variant | None = None
        self._judge: Judge | None = None
        self._judge_factory: Callable[[], Judge] | None = None
        self._pricing = pricing or {}
        self._followup_model = followup_model
        self._conversation = self._make_conversation()
        self._conversations = [self._conversation]

    @property
    def reply(self) -> str:
        """The agent's last reply text in the current conversation ("" before the first `send`).

        Raises:
            UsageError: A `t.send(...)` before it was never awaited, so this would be the reply before it.
        """
        forgotten = self._state.awaits.unstarted()
        if forgotten is not None:
            raise UsageError(forgotten.message())  # now, not a check of the stale reply and the same error later
        return self._conversation.reply

    def _reply_text(self) -> str:
        return self.reply

    def _asked_text(self) -> str | None:
        return self._conversation.asked

    @property
    def judge(self) -> Judge:
        """LLM-as-judge: `t.judge.rubric(...)`, `t.judge.autoevals.closed_qa(...)`, `g_eval`, `vote`, ...

        Judge calls start at once, run while the eval goes on, and settle before the outcome is folded.
        """
        if self._judge is None:
            if self._judge_factory is None:
                raise UsageError("t.judge is available while an eval runs under `niceeval run`.")
            self._judge = self._judge_factory()
        return self._judge

    @property
    def case(self) -> Any:
        """The dataset row this run uses (`define_eval(cases=...)`): a dict, or the eval's `case_model`."""
        if self._case is None:
            raise UsageError("t.case exists only in evals with cases: @define_eval(cases='data/qa.jsonl').")
        return self._case

    @property
    def variant(self) -> Variant:
        """The variant combination of this run (`variants={...}`): `t.variant["prompt"]`, `t.variant.name`."""
        if self._variant is None:
            raise UsageError("t.variant exists only in evals with variants: @define_eval(variants={'prompt': [...]}).")
        return self._variant

    @property
    def sandbox(self) -> Sandbox:
        """The workspace of a sandbox eval (`@define_eval(fixture=...)`): run commands, read files, diff."""
        if self._sandbox is None:
            raise UsageError(
                "t.sandbox exists only in sandbox evals: give the eval a fixture, "
                "e.g. @define_eval(fixture='evals/fixtures/app')."
            )
        return self._sandbox

    @property
    def session_id(self) -> str:
        """The id of the current conversation with the agent."""
        return self._conversation.id

    @property
    def usage(self) -> Usage:
        """Tokens and cost of the agent's model calls so far in this run."""
        return usage_of(self._state.log.events, self._pricing)

    @property
    def events(self) -> list[Event]:
        """The run's event stream so far."""
        return self._state.log.events

    def _span_list(self) -> list[Span]:
        return self._state.log.spans

    def check(self, value: Any = _NO_VALUE, matcher: Matcher | None = None, /) -> Check:
        """Score `value` with `matcher` and record it; the eval goes on whatever the result."""
        _needs_value(value, "check")
        return self._record(value, matcher, caller_location(1), required=False, verb="check")

    def require(self, value: Any = _NO_VALUE, matcher: Matcher | None = None, /) -> Check:
        """Like `check`, but a miss stops the eval (as a failed gate): use it for preconditions.

        With an async matcher, write `await t.require(...)`.
        """
        _needs_value(value, "require")
        return self._record(value, matcher, caller_location(1), required=True, verb="require")

    @contextmanager
    def group(self, name: str) -> Iterator[None]:
        """Group the assertions made inside the block: reports name them `name › assertion` (groups nest).

        `with t.group("checkout"): t.check(t.reply, includes("total"))` records `checkout › includes('total')`.
        """
        if not isinstance(name, str) or not name.strip():
            raise UsageError(f"t.group() at {caller_location(2)} needs a name, e.g. with t.group('checkout'): ...")
        token = CURRENT_GROUP.set((*CURRENT_GROUP.get(), name.strip()))
        try:
            yield
        finally:
            CURRENT_GROUP.reset(token)

    def skip(self, reason: str) -> NoReturn:
        """Stop the eval and mark it `skipped` (unless a gate already failed)."""
        self._state.skip_reason = str(reason)
        raise Skipped(str(reason))

    def _record(self, value: Any, matcher: Matcher | None, location: str | None, *, required: bool, verb: str) -> Check:
        if inspect.isawaitable(value):
            _refuse_awaitable(value, location, verb)
        if not isinstance(matcher, Matcher):
            what = "no matcher" if matcher is None else f"{short(matcher)}, which is not a matcher"
            raise UsageError(
                f"t.{verb}() at {location} was given {what}. Pass one from niceeval.expect, "
                f"e.g. t.{verb}(t.reply, includes('refund'))."
            )
        if required:
            matcher = matcher.gate()
        if CURRENT_GROUP.get():
            matcher = matcher._chained(name=grouped(matcher.name))
        handle = Check(location, required=required)
        try:
            raw = matcher.score_fn(value)
        except Exception as exc:
            return self._finish(handle, matcher.crashed(exc, location), required)
        if inspect.isawaitable(raw):
            return self._pending(handle, matcher, raw, location, required)
        return self._finish(handle, matcher.result(raw, location), required)

    def _finish(self, handle: Check, result: AssertionResult, required: bool) -> Check:
        self._state.assertions.append(result)
        handle._resolve(result)
        if required and result.state == "failed":
            raise RequireFailed(result)
        return handle

    def _pending(
        self, handle: Check, matcher: Matcher, raw: Awaitable[ScoreLike], location: str | None, required: bool
    ) -> Check:
        async def settle() -> None:
            try:
                result = matcher.result(await raw, location)
            except UsageError as exc:
                self._state.usage_error = error_info(exc)
                result = matcher.crashed(exc, location)
            except Exception as exc:
                result = matcher.crashed(exc, location)
            self._state.assertions.append(result)
            handle._resolve(result)

        self._tg.start_soon(settle)
        if required:
            self._state.pending_requires.append(handle)
        return handle

    def _make_conversation(self) -> Conversation:
        return Conversation(
            self._agent_spec,
            self._state.log,
            self._eval_id,
            followup_model=self._followup_model,
            pricing=self._pricing,
            host=self,
            number=len(getattr(self, "_conversations", ())) + 1,
        )

    # The scope host: what turns and sessions register their assertions with.
    def _host_register(self, handle: Scoped) -> None:
        self._scoped.append(handle)

    def _host_check(self, value: Any, matcher: Matcher, location: str | None, required: bool) -> Check:
        return self._record(value, matcher, location, required=required, verb="require" if required else "check")

    def _host_judge(self) -> Judge:
        return self.judge

    def _host_prices(self) -> Mapping[str, Price]:
        return self._pricing

    def _host_owner(self) -> object:
        return self._state.awaits

    def _host_eval_id(self) -> str:
        return self._eval_id

    @property
    def session(self) -> Session:
        """The current conversation, for assertions over only its turns: `t.session.called_tool("search")`."""
        return Session(self._conversation, self)

    @property
    def tool_calls(self) -> list[ToolCall]:
        """The run's tool calls so far, in order, typed: name, input, output, status, duration."""
        return tool_calls_of(self._state.log.events)

    def _new_conversation(self) -> Session:
        self._conversation = self._make_conversation()
        self._conversations.append(self._conversation)
        return Session(self._conversation, self)

    async def _close(self) -> None:
        for conversation in self._conversations:
            await conversation.close()

    def _release(self) -> None:
        """Let go of what ties a finished run in reference cycles (its conversations point back at the context, its
        judge's callbacks read the context): reference counting then frees the run as soon as the runner drops
        it, instead of the collector much later (a suite's memory grew by about 10 KB per eval)."""
        for conversation in self._conversations:
            conversation._host = None
        self._judge = None
        self._judge_factory = None


def _refuse_awaitable(value: Any, location: str | None, verb: str) -> NoReturn:
    if inspect.iscoroutine(value):
        value.close()  # it will never run: say so here, not in a RuntimeWarning at garbage collection
        given = f"the coroutine {value.__qualname__}(...)"
    else:
        given = f"an awaitable {type(value).__name__}"
    raise UsageError(
        f"t.{verb}() at {location} was given {given} instead of its value: add await, "
        f"e.g. t.{verb}(await t.sandbox.exists('app.py'), equals(True))."
    )


class EvalContext(ContextBase):
    """The context `t` given to an `async def` eval.

    `send`, `respond` and `revive` return coroutines: a call left without `await` fails the run, naming its line.
    """

    def send(
        self,
        text: Message,
        *,
        output: type[Any] | None = None,
        followups: int = 0,
        files: Sequence[str | Path | bytes | Attachment] | None = None,
        deps: Any = None,
    ) -> Coroutine[Any, Any, Turn]:
        """Send `text` to the agent under test (continuing the same conversation) and return its turn.

        Await it: `turn = await t.send("hi")`.

        Args:
            text: The user message, or a chat ending with it: `[{"role": "user", "content": ...}, ...]` (a
                function agent gets the list; openai_agent / anthropic_agent continue from it).
            output: A pydantic model (or type) the reply must validate as; it becomes `turn.data`.
            followups: Answer up to this many clarification questions from the agent (detected by the judge
                model) so the turn returned is the final answer.
            files: Images, PDFs or text files (paths or bytes) sent with the message: content parts for
                openai_agent / anthropic_agent, `session.files` for a function agent.
            deps: This turn's dependencies for a framework agent: pydantic-ai `deps`, the OpenAI Agents SDK's
                `context`, or a dict merged into a LangGraph config.
        """
        where = f"t.send() at {caller_location(1)}"
        split_chat(text, where)  # a malformed chat is an error here, at the line
        attached = load_attachments(files, where) if files else []
        turn = self._conversation.send_with_followups(text, output, followups, attached, deps)
        return tracked(turn, "t.send(...)")

    def respond(self, value: object) -> Coroutine[Any, Any, Turn]:
        """Answer the agent's request for human input (the last turn was `waiting`) and continue (await it)."""
        return tracked(self._conversation.respond(value), "t.respond(...)")

    def respond_all(self, value: object) -> Coroutine[Any, Any, Turn]:
        """Answer every input request the agent makes with `value`, until it stops asking (await it)."""
        return tracked(self._conversation.respond_all(value), "t.respond_all(...)")

    def revive(self) -> Coroutine[Any, Any, None]:
        """Close the session and reopen it by the same id: the conversation must continue from storage (await it)."""
        return tracked(self._conversation.revive(), "t.revive()")

    def new_session(self) -> Session:
        """Start a separate conversation: later `send` calls and `reply` use it. Returns its handle, for
        assertions over only its turns."""
        return self._new_conversation()


class SyncEvalContext(ContextBase):
    """The context `t` given to a plain `def` eval (which runs in a daemon worker thread)."""

    portal: BlockingPortal | None = None
    """Set by the runner: how code in the eval's thread calls back into the event loop."""

    def _call_in_loop(self, fn: Callable[..., Awaitable[T]], *args: Any) -> T:
        if self.portal is None:
            raise UsageError("a sync eval context is only usable inside `niceeval run` (no event loop portal).")
        result: T = self.portal.call(fn, *args)
        return result

    def send(
        self,
        text: Message,
        *,
        output: type[Any] | None = None,
        followups: int = 0,
        files: Sequence[str | Path | bytes | Attachment] | None = None,
        deps: Any = None,
    ) -> Turn:
        """Send `text` (with `files`, when given) to the agent under test and return its turn."""
        where = f"t.send() at {caller_location(1)}"
        split_chat(text, where)  # a malformed chat is an error here, at the line
        attached = load_attachments(files, where) if files else []
        return self._call_in_loop(self._conversation.send_with_followups, text, output, followups, attached, deps)

    def respond(self, value: object) -> Turn:
        """Answer the agent's request for human input (the last turn was `waiting`) and continue."""
        return self._call_in_loop(self._conversation.respond, value)

    def respond_all(self, value: object) -> Turn:
        """Answer every input request the agent makes with `value`, until it stops asking."""
        return self._call_in_loop(self._conversation.respond_all, value)

    def revive(self) -> None:
        """Close the session and reopen it by the same id: the conversation must continue from storage."""
        self._call_in_loop(self._conversation.revive)

    def new_session(self) -> Session:
        """Start a separate conversation: later `send` calls and `reply` use it. Returns its handle, for
        assertions over only its turns."""
        return self._new_conversation()

    def _pending(
        self, handle: Check, matcher: Matcher, raw: Awaitable[ScoreLike], location: str | None, required: bool
    ) -> Check:
        async def wait() -> ScoreLike:
            return await raw

        try:
            result = matcher.result(self._call_in_loop(wait), location)
        except UsageError:
            raise
        except Exception as exc:
            result = matcher.crashed(exc, location)
        return self._finish(handle, result, required)
