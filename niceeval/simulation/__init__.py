"""Simulated users: personas that a user model plays against the agent, turn by turn, toward a goal.

    from niceeval.simulation import persona

    billing_admin = persona("billing-admin", traits=["busy"], knowledge="knows the invoice number", style="terse")

    @define_eval
    async def refund(t):
        sim = await t.simulate(user=billing_admin, goal="get invoice 1042 refunded", max_turns=6)

`t.simulate` is in the eval context; this package holds the personas (`persona(...)` and the built-ins `novice`,
`expert`, `impatient`, `indecisive`), the user model's turn and its cache, `UserModelUnavailable`, and the realism
check (`discriminate`: can a judge tell simulated conversations from real ones?). See docs/simulation.md.

Design: docs/design/simulation.md
"""

from typing import TYPE_CHECKING

from niceeval._core.lazy import lazy_getattr
from niceeval.simulation._persona import (
    BUILT_IN,
    Persona,
    expert,
    impatient,
    indecisive,
    novice,
    persona,
    resolve_persona,
)
from niceeval.simulation._user import Exchange, Scene, UserModel, UserModelUnavailable, UserTurn, user_turn

if TYPE_CHECKING:
    from niceeval.simulation._discriminate import (
        Guess,
        RealismReport,
        Transcript,
        discriminate,
        read_transcripts,
        simulated_transcripts,
    )

__all__ = [
    "BUILT_IN",
    "Exchange",
    "Guess",
    "Persona",
    "RealismReport",
    "Scene",
    "Transcript",
    "UserModel",
    "UserModelUnavailable",
    "UserTurn",
    "discriminate",
    "expert",
    "impatient",
    "indecisive",
    "novice",
    "persona",
    "read_transcripts",
    "resolve_persona",
    "simulated_transcripts",
    "user_turn",
]

_REALISM = ("Guess", "RealismReport", "Transcript", "discriminate", "read_transcripts", "simulated_transcripts")
__getattr__ = lazy_getattr(__name__, {name: "._discriminate" for name in _REALISM})
