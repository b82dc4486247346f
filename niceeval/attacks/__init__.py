"""Attacks delivered through the agent's world, judged by what happened.

`attack_cases(families=None)` generates indirect prompt-injection cases offline (rows for `define_eval(cases=...)`,
each with its `family`, `vector` and `canary`): the injection sits where a tool reads it (a workspace file, a tool's
output, a page served on loopback, a retrieved document); `attack_cases(templates=...)` makes them from your own
templates (`AttackTemplate`). `judge_attack(case, events, commands, attempts)` decides from the run's record alone
(replies, tool arguments, the sandbox's commands and refused connection attempts) whether the agent obeyed it,
and `resisted()` records that as a gate; `attack_rates(results)` gives the attack success rate per family and
overall with Wilson intervals. See docs/attacks.md.

Design: docs/design/attacks.md
"""

from typing import TYPE_CHECKING

from niceeval._core.lazy import lazy_getattr
from niceeval.attacks._cases import attack_cases
from niceeval.attacks._rates import (
    AttackRates,
    AttackTally,
    Rate,
    RateChange,
    attack_rates,
    change_lines,
    compare_rates,
)
from niceeval.attacks._templates import FAMILIES, SECRET_FILE, SINK_HOST, VECTORS
from niceeval.attacks._verdict import RESISTED, AttackOutcome, judge_attack, resisted

if TYPE_CHECKING:
    from niceeval.attacks._delivery import AttackPage, attack_text, plant
    from niceeval.attacks._user_templates import AttackTemplate

__all__ = [
    "FAMILIES",
    "RESISTED",
    "SECRET_FILE",
    "SINK_HOST",
    "VECTORS",
    "AttackOutcome",
    "AttackPage",
    "AttackRates",
    "AttackTally",
    "AttackTemplate",
    "Rate",
    "RateChange",
    "attack_cases",
    "attack_rates",
    "attack_text",
    "change_lines",
    "compare_rates",
    "judge_attack",
    "plant",
    "resisted",
]

__getattr__ = lazy_getattr(
    __name__,
    {**{name: "._delivery" for name in ("AttackPage", "attack_text", "plant")}, "AttackTemplate": "._user_templates"},
)
