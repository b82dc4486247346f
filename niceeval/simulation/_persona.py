"""Personas: who a simulated user is (traits, what they know, how they write), and the built-in set."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from niceeval._core.errors import UsageError
from niceeval._core.values import short


@dataclass(frozen=True, kw_only=True, slots=True)
class Persona:
    """A simulated user: what the user model is told to be. Build one with `persona(...)`."""

    name: str
    """Names the persona in reports and in the user-turn cache key."""
    traits: tuple[str, ...] = ()
    """What the user is like ("impatient", "new to the product")."""
    knowledge: str = ""
    """What the user knows and does not know (the agent must not assume more)."""
    style: str = ""
    """How the user writes ("short informal messages, no greetings")."""

    def describe(self) -> str:
        """The persona as the user model reads it."""
        lines = [f"Name: {self.name}"]
        if self.traits:
            lines.append("Traits: " + "; ".join(self.traits))
        if self.knowledge:
            lines.append(f"Knowledge: {self.knowledge}")
        if self.style:
            lines.append(f"Style: {self.style}")
        return "\n".join(lines)


def persona(name: str, traits: Sequence[str] | str = (), knowledge: str = "", style: str = "") -> Persona:
    """A persona for `t.simulate(user=...)`.

    Args:
        name: A short name, shown in reports ("novice", "billing-admin").
        traits: What the user is like: one phrase or several.
        knowledge: What the user knows, and what they do not.
        style: How the user writes.

    Raises:
        UsageError: A field is not text (the message says which and what to write).
    """
    if not isinstance(name, str) or not name.strip():
        raise UsageError(f"persona() needs a name, a non-empty string such as 'novice'; got {short(name)}.")
    listed = (traits,) if isinstance(traits, str) else traits
    if not isinstance(listed, Sequence) or not all(isinstance(trait, str) and trait.strip() for trait in listed):
        raise UsageError(
            f"persona({name!r}): traits must be phrases (strings), e.g. traits=['impatient', 'terse']; "
            f"got {short(traits)}."
        )
    for field_name, value in (("knowledge", knowledge), ("style", style)):
        if not isinstance(value, str):
            raise UsageError(f"persona({name!r}): {field_name} must be a string; got {short(value)}.")
    return Persona(
        name=name.strip(),
        traits=tuple(trait.strip() for trait in listed),
        knowledge=knowledge.strip(),
        style=style.strip(),
    )


novice = persona(
    "novice",
    traits=["new to the product", "unsure of the right terms", "polite"],
    knowledge="Knows what they want done but not how the product names things; has not read the documentation.",
    style="Plain everyday words, sometimes vague; answers questions but rarely volunteers details.",
)
expert = persona(
    "expert",
    traits=["experienced user", "precise", "expects exact answers"],
    knowledge="Knows the product and its vocabulary well; notices a vague or wrong answer.",
    style="Terse and specific; names the exact thing they want.",
)
impatient = persona(
    "impatient",
    traits=["in a hurry", "dislikes being asked questions", "pushes back on long answers"],
    knowledge="Knows the essentials of what they want; gives details only when asked twice.",
    style="One short line per message, no greetings.",
)
indecisive = persona(
    "indecisive",
    traits=["changes their mind once during the conversation", "asks for options before choosing"],
    knowledge="Knows the general goal, not the specifics; settles on one option after seeing the choices.",
    style="Conversational, thinks aloud, sometimes revises what they said before.",
)

BUILT_IN: dict[str, Persona] = {p.name: p for p in (novice, expert, impatient, indecisive)}
"""The built-in personas by name: `t.simulate(user="novice", ...)` is `t.simulate(user=novice, ...)`."""


def resolve_persona(user: object) -> Persona:
    """The persona `user` names or is; a usage error listing the built-ins for anything else."""
    if isinstance(user, Persona):
        return user
    if isinstance(user, str) and user in BUILT_IN:
        return BUILT_IN[user]
    raise UsageError(
        f"t.simulate(user=...) takes a persona from niceeval.simulation (persona(name, traits, knowledge, style)) "
        f"or a built-in name ({', '.join(sorted(BUILT_IN))}); got {short(user)}."
    )
