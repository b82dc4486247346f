"""A run's events grouped into rounds of the conversation, each with the judge verdicts on its reply.

Used by the viewer's eval-run and compare pages and by the HTML report.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from niceeval._core.assertion import AssertionResult
from niceeval._core.events import ActionCalledEvent, Event, MessageEvent, UsageEvent
from niceeval._core.results import RunResult


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


def commands(result: RunResult) -> list[ActionCalledEvent]:
    """The shell commands of a run (a sandbox's setup and scripts, an agent's shell calls), in order."""
    return [e for e in result.events if isinstance(e, ActionCalledEvent) and e.kind == "shell"]
