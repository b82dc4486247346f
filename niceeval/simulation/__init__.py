"""Simulated users: personas that a user model plays against the agent, turn by turn, toward a goal.

    from niceeval.simulation import persona

    billing_admin = persona("billing-admin", traits=["busy"], knowledge="knows the invoice number", style="terse")

    @define_eval
    async def refund(t):
        sim = await t.simulate(user=billing_admin, goal="get invoice 1042 refunded", max_turns=6)

`t.simulate` is in the eval context; this package holds the personas (`persona(...)` and the built-ins `novice`,
`expert`, `impatient`, `indecisive`), the user model's turn and its cache, and `UserModelUnavailable`. See
docs/simulation.md.

Design: docs/design/simulation.md
"""

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

__all__ = [
    "BUILT_IN",
    "Exchange",
    "Persona",
    "Scene",
    "UserModel",
    "UserModelUnavailable",
    "UserTurn",
    "expert",
    "impatient",
    "indecisive",
    "novice",
    "persona",
    "resolve_persona",
    "user_turn",
]
