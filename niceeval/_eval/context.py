"""The eval context `t`: what an eval function uses to talk to the agent and record assertions.

The runner builds `t` from one `RunInputs` record and the run's `RunState`. `t` holds its parts by composition and
each public method is a thin delegation to the part that implements it, in the module named for it:

- `checks.Checks`: `check`, `require`, `group`, `skip`;
- `sessions.Sessions`: `reply`, `session`, `session_id`, `new_session`; its current `conversation.Conversation`
  answers `send`, `respond`, `respond_all`, `revive`;
- `observe.Observations`: `events`, `tool_calls`, `usage` and the assertions over the event stream and the
  workspace (`called_tool`, `max_tokens`, `file_changed`, ...);
- `spanmatch.SpanAssertions`: `spans`, `span`, `no_span`, `no_error_spans`;
- `compare.Comparisons`: `max_score`, `select_best`; `case_checks.CaseChecks`: `check_case` (and `case`);
- `run_judge.RunJudge`: `judge`; `checked_sandbox.CheckedSandbox`: `sandbox`.

No part refers back to `t`, and what the judge and the turns reach refers to no conversation: a finished run holds
no reference cycle and is freed by reference counting as soon as the runner lets go of it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Coroutine, Mapping, Sequence
from contextlib import AbstractContextManager
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from niceeval._core.assertion import Chainable, Matcher
from niceeval._core.awaits import tracked
from niceeval._core.errors import UsageError, caller_location
from niceeval._core.events import Event, EventType
from niceeval._core.spans import Span
from niceeval._core.toolmatch import InputSpec
from niceeval._eval.case_checks import REPLY, CaseChecks, row_of
from niceeval._eval.checked_sandbox import CheckedSandbox
from niceeval._eval.checks import NO_VALUE, AsyncChecks, BlockingChecks, Checks, Starter, thread_starter
from niceeval._eval.checks import Check as Check  # re-exported: the context is where users meet them
from niceeval._eval.checks import RequireFailed as RequireFailed
from niceeval._eval.checks import Skipped as Skipped
from niceeval._eval.checks import StopEval as StopEval
from niceeval._eval.compare import Comparison, Comparisons, Method
from niceeval._eval.conversation import ConversationSetup, Message, Session, Turn, attachments_of
from niceeval._eval.efficiency import Usage
from niceeval._eval.experiment import Flags
from niceeval._eval.inputs import RunInputs as RunInputs  # re-exported: the runner's door to the context
from niceeval._eval.inputs import RunState as RunState
from niceeval._eval.observe import Observations, Scoped, ToolCall
from niceeval._eval.run_judge import JudgeOpener as JudgeOpener
from niceeval._eval.run_judge import JudgeView as JudgeView
from niceeval._eval.run_judge import RunJudge
from niceeval._eval.scopes import ScopeHost
from niceeval._eval.sessions import Latest, Sessions
from niceeval._eval.simulate import SimulatedConversation, simulate, simulation_request
from niceeval._eval.spanmatch import NameSpec, SpanAssertions
from niceeval._eval.variants import Variant
from niceeval._eval.workspace import ContentSpec, DiffSide
from niceeval.agents import Attachment
from niceeval.expect import EventPattern, ToolPattern

if TYPE_CHECKING:
    from niceeval.judge import Judge
    from niceeval.sandbox import Sandbox
    from niceeval.simulation import Persona
    from niceeval.tracing import Trace


class ContextBase:
    """What sync and async eval contexts share: checks, skip, the reply, the event stream, scoped assertions.

    Args:
        inputs: Everything the run is given (agent, case, variant, sandbox, judge, prices).
        state: What the run accumulates, for the runner to fold.
        checks: How checks settle an async matcher (on the task group, or blocking the eval's thread).
        start: How background work (judge calls) starts on the run's task group.
    """

    def __init__(self, inputs: RunInputs, state: RunState, *, checks: Checks, start: Starter) -> None:
        self._inputs = inputs
        self._state = state
        self._checks = checks
        self._start = start

    # The parts behind the methods, each made on first use: most evals use a few (a dataset's check uses none).
    @cached_property
    def _latest(self) -> Latest:
        return Latest(self._state.awaits)

    @cached_property
    def _judge(self) -> RunJudge:
        state, latest = self._state, self._latest
        return RunJudge(
            self._inputs.judge,
            start=self._start,
            reply=latest.reply,
            asked=latest.asked,
            log=state.log,
            case=self._inputs.case,
        )

    @cached_property
    def _scope(self) -> ScopeHost:
        inputs, state = self._inputs, self._state
        return ScopeHost(
            eval_id=inputs.eval_id,
            checks=self._checks,
            scoped=state.scoped,
            judge=self._judge,
            pricing=inputs.pricing,
            awaits=state.awaits,
        )

    @cached_property
    def _sessions(self) -> Sessions:
        inputs = self._inputs
        setup = ConversationSetup(
            agent=inputs.agent,
            log=self._state.log,
            eval_id=inputs.eval_id,
            scope=self._scope,
            pricing=inputs.pricing,
            followup_model=inputs.followup_model,
            sandbox=inputs.sandbox,
        )
        return Sessions(setup, self._latest)

    @cached_property
    def _observed(self) -> Observations:
        state = self._state
        return Observations(
            log=state.log, scoped=state.scoped, diff_scoped=state.diff_scoped, pricing=self._inputs.pricing
        )

    @cached_property
    def _traced(self) -> SpanAssertions:
        return SpanAssertions(log=self._state.log, span_scoped=self._state.span_scoped)

    @cached_property
    def _comparisons(self) -> Comparisons:
        latest = self._latest
        return Comparisons(comparisons=self._state.comparisons, reply=latest.reply, asked=latest.asked)

    @cached_property
    def _case_checks(self) -> CaseChecks:
        latest = self._latest
        return CaseChecks(case=self._inputs.case, scope=self._scope, reply=latest.reply, comparisons=self._comparisons)

    @cached_property
    def _sandbox(self) -> Sandbox | None:
        return CheckedSandbox(self._inputs.sandbox) if self._inputs.sandbox is not None else None

    def _opened(self) -> bool:
        """Whether an agent session is open, for `_close` to close (the conversations made none until asked for:
        `cached_property` keeps a part in the instance's `__dict__` once made)."""
        return "_sessions" in vars(self) and self._sessions.opened()

    async def _close(self) -> None:
        """Close the agent sessions of every conversation (the runner does, once the eval returned)."""
        if self._opened():
            await self._sessions.close()

    # What the run is given.
    @property
    def judge(self) -> Judge:
        """LLM-as-judge: `t.judge.rubric(...)`, `t.judge.autoevals.closed_qa(...)`, `g_eval`, `vote`, ...

        Judge calls start at once, run while the eval goes on, and settle before the outcome is folded.
        """
        return self._judge.get()

    @property
    def case(self) -> Any:
        """The dataset row this run uses (`define_eval(cases=...)`): a dict, or the eval's `case_model`."""
        return row_of(self._inputs.case)

    @property
    def variant(self) -> Variant:
        """The variant combination of this run (`variants={...}`): `t.variant["prompt"]`, `t.variant.name`."""
        if self._inputs.variant is None:
            raise UsageError("t.variant exists only in evals with variants: @define_eval(variants={'prompt': [...]}).")
        return self._inputs.variant

    @property
    def experiment(self) -> str | None:
        """The id of the experiment this run is part of (`experiments/<id>.py`); None outside `niceeval exp`."""
        return self._inputs.experiment.id if self._inputs.experiment is not None else None

    @property
    def model(self) -> str | None:
        """The experiment's `model=` (`provider/name`); None outside an experiment or when it sets none."""
        return self._inputs.experiment.model if self._inputs.experiment is not None else None

    @property
    def flags(self) -> Flags:
        """The experiment's `flags=`: `t.flags["prompt"]`; a flag it does not set is an error naming the
        experiments that set flags (`t.flags.get("prompt", "long")` reads one with a default)."""
        exp = self._inputs.experiment
        if exp is None:
            return Flags({}, eval_id=self._inputs.eval_id, experiment=None)
        return Flags(exp.flags, eval_id=self._inputs.eval_id, experiment=exp.id, known=exp.known)

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
    def trace(self) -> Trace:
        """The finished production trace an online eval scores (`@define_eval(online=True)`): its spans, input,
        reply and service."""
        if self._inputs.trace is None:
            raise UsageError(
                "t.trace exists only in online evals, which score production traces: @define_eval(online=True) "
                "and `niceeval watch` (docs/online.md)."
            )
        return self._inputs.trace

    @property
    def input(self) -> str:
        """The user's message of the trace an online eval scores (`t.trace.input`)."""
        return self.trace.input

    # The conversations (`sessions.py`).
    @property
    def reply(self) -> str:
        """The agent's last reply text in the current conversation ("" before the first `send`).

        Raises:
            UsageError: A `t.send(...)` before it was never awaited, so this would be the reply before it.
        """
        return self._sessions.reply

    @property
    def session_id(self) -> str:
        """The id of the current conversation with the agent."""
        return self._sessions.session_id

    @property
    def session(self) -> Session:
        """The current conversation, for assertions over only its turns: `t.session.called_tool("search")`."""
        return self._sessions.session

    def new_session(self) -> Session:
        """Start a separate conversation: later `send` calls and `reply` use it. Returns its handle, for
        assertions over only its turns."""
        return self._sessions.new_session()

    # Checks (`checks.py`).
    def check(self, value: Any = NO_VALUE, matcher: Matcher | None = None, /) -> Check:
        """Score `value` with `matcher` and record it; the eval goes on whatever the result."""
        return self._checks.check(value, matcher)

    def require(self, value: Any = NO_VALUE, matcher: Matcher | None = None, /) -> Check:
        """Like `check`, but a miss stops the eval (as a failed gate): use it for preconditions.

        With an async matcher, write `await t.require(...)`.
        """
        return self._checks.require(value, matcher)

    def group(self, name: str) -> AbstractContextManager[None]:
        """Group the assertions made inside the block: reports name them `name › assertion` (groups nest).

        `with t.group("checkout"): t.check(t.reply, includes("total"))` records `checkout › includes('total')`.
        """
        return self._checks.group(name)

    def score(self, points: float, label: str) -> None:
        """Award `points` (zero or more) in a score eval (`@define_eval(points=3)`): `t.score(1, "parses the file")`."""
        self._checks.score(points, label)

    def skip(self, reason: str) -> NoReturn:
        """Stop the eval and mark it `skipped` (unless a gate already failed)."""
        self._checks.skip(reason)

    # The event stream and the assertions over it (`observe.py`).
    @property
    def events(self) -> list[Event]:
        """The run's event stream so far."""
        return self._observed.events

    @property
    def tool_calls(self) -> list[ToolCall]:
        """The run's tool calls so far, in order, typed: name, input, output, status, duration."""
        return self._observed.tool_calls

    @property
    def usage(self) -> Usage:
        """Tokens and cost of the agent's model calls so far in this run."""
        return self._observed.usage

    def succeeded(self) -> Scoped:
        """The run completed without error events or a pending input request."""
        return self._observed.succeeded()

    def parked(self) -> Scoped:
        """The run ended cleanly waiting for human input."""
        return self._observed.parked()

    def message_includes(self, needle: str | re.Pattern[str]) -> Scoped:
        """Some message's text includes `needle` (substring or compiled regex)."""
        return self._observed.message_includes(needle)

    def called_tool(
        self,
        name: str,
        *,
        input: InputSpec | None = None,
        count: int | None = None,
        at_least: int | None = None,
        status: str | None = None,
    ) -> Scoped:
        """Tool `name` was called (with matching `input` and `status`): `count` times exactly, or `at_least`."""
        return self._observed.called_tool(name, input=input, count=count, at_least=at_least, status=status)

    def not_called_tool(self, name: str, *, input: InputSpec | None = None) -> Scoped:
        """Tool `name` was never called (with matching `input`, when given)."""
        return self._observed.not_called_tool(name, input=input)

    def tool_order(self, steps: Sequence[str | ToolPattern]) -> Scoped:
        """The tools were called in this relative order: names, or `tool(name, input=..., status=...)`."""
        return self._observed.tool_order(steps)

    def used_no_tools(self) -> Scoped:
        """No tool was called."""
        return self._observed.used_no_tools()

    def max_tool_calls(self, limit: int) -> Scoped:
        """At most `limit` tool calls."""
        return self._observed.max_tool_calls(limit)

    def loaded_skill(self, skill: str) -> Scoped:
        """Skill `skill` was loaded."""
        return self._observed.loaded_skill(skill)

    def called_subagent(self, name: str, *, remote_url: str | re.Pattern[str] | None = None) -> Scoped:
        """Subagent `name` was called (at a matching `remote_url`, when given)."""
        return self._observed.called_subagent(name, remote_url=remote_url)

    def no_failed_actions(self) -> Scoped:
        """No tool, shell, skill or subagent call failed."""
        return self._observed.no_failed_actions()

    def event(self, event_type: EventType, *, data: InputSpec | None = None, count: int | None = None) -> Scoped:
        """An event of this type appeared (matching `data`; exactly `count` times when given)."""
        return self._observed.event(event_type, data=data, count=count)

    def not_event(self, event_type: EventType) -> Scoped:
        """No event of this type appeared."""
        return self._observed.not_event(event_type)

    def event_order(self, steps: Sequence[EventType | EventPattern]) -> Scoped:
        """Events appeared in this relative order: types, or `event(type, data=...)`."""
        return self._observed.event_order(steps)

    def events_satisfy(self, label: str, predicate: Callable[[list[Event]], bool]) -> Scoped:
        """`predicate(events)` holds over the whole stream."""
        return self._observed.events_satisfy(label, predicate)

    def max_tokens(self, limit: int) -> Scoped:
        """Total tokens stay within `limit` (gate; score `limit / actual` beyond it)."""
        return self._observed.max_tokens(limit)

    def max_latency(self, seconds: float) -> Scoped:
        """Every turn in scope took at most `seconds` (gate; score `limit / slowest` beyond it)."""
        return self._observed.max_latency(seconds)

    def max_cost(self, usd: float) -> Scoped:
        """Estimated cost stays within `usd` (gate; inconclusive when a model has no price)."""
        return self._observed.max_cost(usd)

    def file_changed(self, path: str, *, before: ContentSpec | None = None, after: ContentSpec | None = None) -> Scoped:
        """Sandbox evals: the fixture's file at `path` was modified; its text `before` and `after` the run match,
        when given (a string is the exact text, a compiled regex is searched, a matcher is applied)."""
        return self._observed.file_changed(path, before=before, after=after)

    def no_changes(self) -> Scoped:
        """Sandbox evals: nothing in the workspace changed."""
        return self._observed.no_changes()

    def changed_paths(self, paths: Sequence[str]) -> Scoped:
        """Sandbox evals: exactly these paths changed (added, modified or deleted), in any order."""
        return self._observed.changed_paths(paths)

    def file_added(self, path: str) -> Scoped:
        """Sandbox evals: a file was created at `path`."""
        return self._observed.file_added(path)

    def file_deleted(self, path: str) -> Scoped:
        """Sandbox evals: the fixture's file at `path` was deleted."""
        return self._observed.file_deleted(path)

    def not_in_diff(self, pattern: str | re.Pattern[str], *, side: DiffSide = "both") -> Scoped:
        """Sandbox evals: the workspace diff has no match of the regular expression `pattern` (e.g. no secrets).

        A string is a regular expression, as in `re.search`; pass `re.escape(text)` to search for text literally.
        `side="added"` searches only the lines the diff adds (a secret the agent removed does not count),
        `"removed"` only those it removes.
        """
        return self._observed.not_in_diff(pattern, side=side)

    def no_failed_shell_commands(self) -> Scoped:
        """No shell command exited non-zero."""
        return self._observed.no_failed_shell_commands()

    # The trace (`spanmatch.py`).
    @property
    def spans(self) -> list[Span]:
        """The run's spans so far, in start order, each with `parent` and `children`."""
        return self._traced.spans

    def span(
        self,
        name: NameSpec | None = None,
        *,
        kind: str | None = None,
        attributes: Mapping[str, Any] | None = None,
        count: int | None = None,
        at_least: int | None = None,
        max_duration: float | None = None,
    ) -> Scoped:
        """A span matching `name`, `kind` and `attributes` appears (`count` times exactly, or `at_least`; each
        within `max_duration` seconds when given)."""
        return self._traced.span(
            name, kind=kind, attributes=attributes, count=count, at_least=at_least, max_duration=max_duration
        )

    def no_span(
        self, name: NameSpec | None = None, *, kind: str | None = None, attributes: Mapping[str, Any] | None = None
    ) -> Scoped:
        """No span matches `name`, `kind` and `attributes`."""
        return self._traced.no_span(name, kind=kind, attributes=attributes)

    def no_error_spans(self) -> Scoped:
        """No span of the run's trace ended with status ERROR."""
        return self._traced.no_error_spans()

    # Across variants (`compare.py`) and the case's own entries (`case_checks.py`).
    def max_score(
        self, *, method: Method = "average", weights: Mapping[str, float] | None = None, threshold: float | None = None
    ) -> Comparison:
        """Among the variants' runs of this case, pass the one whose other assertions score highest.

        Each run's aggregate is the weighted average (`method="average"`) or sum (`"sum"`) of its other
        assertions' scores; pass/fail assertions score 1.0/0.0. Ties go to the first variant; when all runs
        fail the least bad is still selected; with `threshold`, none is selected below it. A gate by default.

        Args:
            method: `"average"` (default) or `"sum"`.
            weights: Weight per assertion name or kind (`{"includes": 3, "rubric": 1}`); 1 by default.
            threshold: The least aggregate a run needs to be selected.
        """
        return self._comparisons.max_score(method=method, weights=weights, threshold=threshold)

    def select_best(self, criteria: str, *, on: object = None, model: str | None = None) -> Comparison:
        """Ask the judge which variant's output for this case is best by `criteria`; it passes, the others fail.

        The judge sees every variant's output at once, in an order shuffled per case and run (position bias),
        and its reasoning is kept. Soft by default; inconclusive without a judge (no API key).

        Args:
            criteria: What "best" means, e.g. "Which answer is clearest and correct?".
            on: The value compared; the agent's reply when the method is called by default.
            model: The judge model (`provider/model`), else the eval's or config's judge.
        """
        return self._comparisons.select_best(criteria, on=on, model=model)

    def check_case(self, entries: object = None, *, on: object = REPLY) -> list[Check | Chainable]:
        """Apply the case's `assert:` entries (or `entries`, in the same form) to the reply (or `on=`).

        Each entry becomes the matcher, scoped assertion or judge it maps to (docs/judge.md lists them), recorded
        like a hand-written one: a gate unless the entry says `soft: true`, with its `threshold` and `metric`
        label. A `max_score` entry weighs the others by their `weight`.

        Returns:
            The handles, in the entries' order (compare entries last).
        """
        return self._case_checks.check_case(entries, on=on)


class EvalContext(ContextBase):
    """The context `t` given to an `async def` eval.

    `send`, `respond` and `revive` return coroutines: a call left without `await` fails the run, naming its line.
    """

    def __init__(self, inputs: RunInputs, state: RunState) -> None:
        start = inputs.task_group.start_soon
        super().__init__(inputs, state, checks=AsyncChecks(state, start), start=start)

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
        attached = attachments_of(text, files, f"t.send() at {caller_location(1)}")
        turn = self._sessions.current.send_with_followups(text, output, followups, attached, deps)
        return tracked(turn, "t.send(...)")

    def simulate(
        self,
        *,
        user: Persona | str,
        goal: str,
        max_turns: int = 8,
        seed: int | None = None,
        model: str | None = None,
    ) -> Coroutine[Any, Any, SimulatedConversation]:
        """Let a user model play `user` against the agent, turn by turn, until it judges `goal` met (await it).

        The conversation continues the current session as ordinary turns; it ends when the user judges the goal
        met, when the agent ends it, or after `max_turns` user messages (with a note). Records the check
        `simulate(<persona>): goal met` (a gate). User turns are cached: a rerun against an unchanged agent replays
        them without a request; `--no-cache` samples anew. See docs/simulation.md.

        Args:
            user: A persona from `niceeval.simulation` (`persona(...)`, `novice`, ...) or a built-in's name.
            goal: What the user wants, in words.
            max_turns: The most messages the user sends.
            seed: Which sample of this persona and goal (each its own cached conversation); the run's index
                unless given, so `--runs N` gives N conversations.
            model: The user model (`provider/model`); the judge's model unless given.
        """
        request = simulation_request(user, goal, max_turns, seed, model, caller_location(1))
        return tracked(simulate(self._sessions.current, self._inputs.users, request), "t.simulate(...)")

    def respond(self, value: object) -> Coroutine[Any, Any, Turn]:
        """Answer the agent's request for human input (the last turn was `waiting`) and continue (await it)."""
        return tracked(self._sessions.current.respond(value), "t.respond(...)")

    def respond_all(self, value: object) -> Coroutine[Any, Any, Turn]:
        """Answer every input request the agent makes with `value`, until it stops asking (await it)."""
        return tracked(self._sessions.current.respond_all(value), "t.respond_all(...)")

    def revive(self) -> Coroutine[Any, Any, None]:
        """Close the session and reopen it by the same id: the conversation must continue from storage (await it)."""
        return tracked(self._sessions.current.revive(), "t.revive()")


class SyncEvalContext(ContextBase):
    """The context `t` given to a plain `def` eval (which runs in a daemon worker thread)."""

    def __init__(self, inputs: RunInputs, state: RunState) -> None:
        if inputs.portal is None:
            raise ValueError("a plain `def` eval's context needs RunInputs.portal: its thread's way into the loop")
        self._portal = inputs.portal
        start = thread_starter(inputs.portal, inputs.task_group)
        super().__init__(inputs, state, checks=BlockingChecks(state, inputs.portal), start=start)

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
        attached = attachments_of(text, files, f"t.send() at {caller_location(1)}")
        turn: Turn = self._portal.call(
            self._sessions.current.send_with_followups, text, output, followups, attached, deps
        )
        return turn

    def simulate(
        self,
        *,
        user: Persona | str,
        goal: str,
        max_turns: int = 8,
        seed: int | None = None,
        model: str | None = None,
    ) -> SimulatedConversation:
        """Let a user model play `user` against the agent until it judges `goal` met (see `EvalContext.simulate`)."""
        request = simulation_request(user, goal, max_turns, seed, model, caller_location(1))
        result: SimulatedConversation = self._portal.call(simulate, self._sessions.current, self._inputs.users, request)
        return result

    def respond(self, value: object) -> Turn:
        """Answer the agent's request for human input (the last turn was `waiting`) and continue."""
        return self._portal.call(self._sessions.current.respond, value)

    def respond_all(self, value: object) -> Turn:
        """Answer every input request the agent makes with `value`, until it stops asking."""
        return self._portal.call(self._sessions.current.respond_all, value)

    def revive(self) -> None:
        """Close the session and reopen it by the same id: the conversation must continue from storage."""
        self._portal.call(self._sessions.current.revive)


def inputs_of(t: ContextBase) -> RunInputs:
    """What the runner built `t` from, for framework code that runs as an eval (the dataset eval reads its case's
    source and its variant, which may be absent); an eval author reads `t.case` and `t.variant`."""
    return t._inputs


def state_of(t: ContextBase) -> RunState:
    """What the run of `t` accumulates, for framework code that finds `t` on a stack (the loop watchdog records
    its warning on the run that blocked the loop)."""
    return t._state
