"""One eval run in full: the conversation round by round, every assertion, judge prompts, commands, errors."""

from __future__ import annotations

from dataclasses import dataclass, field

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from niceeval._core.assertion import AssertionResult
from niceeval._core.events import ActionCalledEvent, Event, MessageEvent, UsageEvent
from niceeval._core.results import RunResult
from niceeval.store import RunNotFound
from niceeval.web._render import render
from niceeval.web._requests import required, store_of, suite_run


@dataclass(slots=True)
class Round:
    """One exchange: what the user sent, what happened (tools, subagents, input requests, errors), the reply."""

    number: int
    sent: MessageEvent | None
    steps: list[Event] = field(default_factory=list)
    """Everything after the user message, in order, usage events aside."""
    tokens: int = 0
    judges: list[AssertionResult] = field(default_factory=list)
    """Judge assertions whose prompt quotes this round's reply."""

    @property
    def reply(self) -> str | None:
        """The last assistant message of the round, if any."""
        for step in reversed(self.steps):
            if isinstance(step, MessageEvent) and step.role == "assistant":
                return step.text
        return None


def eval_run_page(request: Request) -> Response:
    """`/runs/{run_id}/eval?id=EVAL_ID&run=N`: one eval run in full."""
    store = store_of(request)
    detail = suite_run(store, request.path_params["run_id"])
    eval_id = required(request, "id")
    text = request.query_params.get("run", "0")
    run_index = int(text) if text.isdigit() else 0
    try:
        result = store.eval_run(detail.run.id, eval_id, run_index)
    except RunNotFound as exc:
        raise HTTPException(404, str(exc)) from None
    siblings = [info for info in detail.eval_runs if info.eval_id == eval_id]
    return render(
        request,
        "eval_run.html",
        run=detail.run,
        result=result,
        siblings=siblings,
        rounds=rounds(result),
        commands=[e for e in result.events if isinstance(e, ActionCalledEvent) and e.kind == "shell"],
    )


def rounds(result: RunResult) -> list[Round]:
    """The run's events grouped into rounds (a round starts at each user message), judges placed per round.

    Events before the first user message form round 0 (setup, a sandbox's commands); it is dropped when empty.
    """
    found = [Round(number=0, sent=None)]
    for event in result.events:
        if isinstance(event, MessageEvent) and event.role == "user":
            found.append(Round(number=len(found), sent=event))
        elif isinstance(event, UsageEvent):
            found[-1].tokens += event.input_tokens + event.output_tokens
        else:
            found[-1].steps.append(event)
    if not found[0].steps and not found[0].tokens:
        found.pop(0)
    _place_judges(found, result.assertions)
    return found


def _place_judges(found: list[Round], assertions: list[AssertionResult]) -> None:
    """Show each judge verdict under the latest round whose reply its prompt quotes."""
    replies = [(r, r.reply) for r in found]
    for assertion in assertions:
        if not assertion.judge_calls:
            continue
        prompt = "\n".join(m.get("content", "") for call in assertion.judge_calls for m in call.messages)
        for target, reply in reversed(replies):
            if reply and reply in prompt:
                target.judges.append(assertion)
                break
