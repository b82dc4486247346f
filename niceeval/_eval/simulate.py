"""`t.simulate(user=..., goal=..., max_turns=...)`: a user model plays a persona against the agent, turn by turn.

The conversation goes through the eval's current conversation like `t.send`, so its turns are ordinary turns (scoped
assertions and judges work on them); the user model's turns come from `niceeval.simulation` (cached). It ends when
the user judges the goal met, when the agent ends it (or its turn fails), or at the turn limit, with a note.
The result records one check, `simulate(<persona>): goal met`, a gate: a simulated eval passes when its user got
what they came for, so pass^k across seeds and personas reads like any pass rate.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

from niceeval._core.assertion import Verdict
from niceeval._core.errors import UsageError
from niceeval._core.values import short
from niceeval._eval.conversation import Conversation, Turn
from niceeval.expect import make_assertion
from niceeval.simulation import (
    Exchange,
    Persona,
    Scene,
    UserModel,
    UserModelUnavailable,
    resolve_persona,
    user_turn,
)

EndedBy = Literal["goal_met", "agent_ended", "turn_limit"]


class UserModelOpener(Protocol):
    """How a run gets its user model (the runner's `JudgeSlot`): the judge's model unless `model` names one."""

    def user_model(self, model: str | None) -> UserModel:
        """The run's user model; a usage error when no model is configured."""
        ...


@dataclass(frozen=True, kw_only=True, slots=True)
class SimulationRequest:
    """What `t.simulate` was asked, read and checked at the call."""

    persona: Persona
    goal: str
    max_turns: int
    seed: int | None
    model: str | None
    location: str | None
    """The eval's line that called `t.simulate`."""


@dataclass(frozen=True, kw_only=True, slots=True)
class SimulatedConversation:
    """What `await t.simulate(...)` returns: the turns, and how and why the conversation ended."""

    persona: Persona
    goal: str
    seed: int
    turns: tuple[Turn, ...]
    """The agent's turns, in order (each an ordinary `Turn`: `sim.turns[0].called_tool("search")`)."""
    ended_by: EndedBy
    """`goal_met` (the user judged the goal reached), `agent_ended`, or `turn_limit`."""
    note: str | None = None
    """Why the conversation ended without the goal (the turn limit, the agent ending it), for the record."""

    @property
    def goal_met(self) -> bool:
        """The simulated user judged the goal reached."""
        return self.ended_by == "goal_met"

    @property
    def transcript(self) -> list[dict[str, str]]:
        """The conversation as chat messages: `[{"role": "user", "content": ...}, {"role": "assistant", ...}]`."""
        messages: list[dict[str, str]] = []
        for turn in self.turns:
            messages.append({"role": "user", "content": turn.asked or ""})
            messages.append({"role": "assistant", "content": turn.message})
        return messages


def simulation_request(
    user: object, goal: object, max_turns: object, seed: object, model: object, location: str | None
) -> SimulationRequest:
    """`t.simulate`'s arguments, checked: a usage error naming the eval's line and what to write."""
    where = f"t.simulate() at {location}"
    if not isinstance(goal, str) or not goal.strip():
        raise UsageError(f"{where} needs goal=, what the user wants in words; got {short(goal)}.")
    if isinstance(max_turns, bool) or not isinstance(max_turns, int) or max_turns < 1:
        raise UsageError(f"{where}: max_turns is how many messages the user may send, >= 1; got {max_turns!r}.")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise UsageError(f"{where}: seed must be an integer (each seed is its own cached conversation); got {seed!r}.")
    if model is not None and not isinstance(model, str):
        raise UsageError(f"{where}: model must be 'provider/model'; got {short(model)}.")
    return SimulationRequest(
        persona=resolve_persona(user), goal=goal.strip(), max_turns=max_turns, seed=seed, model=model, location=location
    )


async def simulate(
    conversation: Conversation, users: UserModelOpener | None, request: SimulationRequest
) -> SimulatedConversation:
    """Play the conversation, record its goal check, and return it.

    Raises:
        UsageError: No user model is configured.
        UserModelUnavailable: The user model gave no turn (the eval errors; nothing already recorded is lost).
    """
    if users is None:
        raise UsageError(f"t.simulate() at {request.location} works inside a run (niceeval run or the pytest fixture).")
    user = users.user_model(request.model)
    scene = Scene(persona=request.persona, goal=request.goal, seed=user.seed if request.seed is None else request.seed)
    log = conversation.setup.log
    said: list[Exchange] = []
    turns: list[Turn] = []
    ended: EndedBy = "turn_limit"
    note: str | None = None
    while True:
        decided = await user_turn(user, scene, said, log)
        if said and decided.goal_met:
            ended = "goal_met"
            break
        if said and decided.agent_ended:
            ended, note = "agent_ended", "the user judged that the agent ended the conversation before the goal was met"
            break
        if len(turns) == request.max_turns:
            note = f"the goal was not met within max_turns={request.max_turns} user messages"
            break
        if not decided.message:  # before the first reply there is nothing to judge met or ended
            raise UserModelUnavailable(f"user model unavailable: {user.model} wrote no opening message")
        turn = await conversation.send_with_followups(decided.message, None, 0)
        turns.append(turn)
        said += [("user", decided.message), ("assistant", turn.message)]
        if turn.status == "failed":
            ended, note = "agent_ended", f"the agent's turn {turn.number} failed"
            break
    result = SimulatedConversation(
        persona=scene.persona, goal=scene.goal, seed=scene.seed, turns=tuple(turns), ended_by=ended, note=note
    )
    _record_goal(conversation, result, request.location)
    return result


def _record_goal(conversation: Conversation, result: SimulatedConversation, location: str | None) -> None:
    def reached(sim: SimulatedConversation) -> bool | Verdict:
        if sim.goal_met:
            return True
        return Verdict(False, f"{sim.note} (goal: {short(sim.goal)}; {len(sim.turns)} turns)", actual=sim.ended_by)

    matcher = make_assertion(name=f"simulate({result.persona.name}): goal met", score=reached)
    conversation.setup.scope.checks.record(result, matcher, location, required=False, verb="simulate")
