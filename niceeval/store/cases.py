"""Test cases written in the viewer, kept in the store with every version.

The viewer edits them (`CaseBook`), `niceeval run` runs them as `ui::NAME`, `niceeval cases export` writes them as
`define_eval` code (`cases_module`).

Importing this module imports SQLAlchemy (whoever uses it reads the store); `niceeval.store.may_hold_cases` answers
first, without it, whether a store can hold any.
"""

from niceeval.store._case_code import case_source, cases_module
from niceeval.store._cases import (
    DEFAULT_THRESHOLD,
    MAX_ROUNDS,
    CaseBook,
    CaseError,
    CaseRound,
    CaseVersion,
    StoredCase,
    UiCase,
    explain,
)

__all__ = [
    "DEFAULT_THRESHOLD",
    "MAX_ROUNDS",
    "CaseBook",
    "CaseError",
    "CaseRound",
    "CaseVersion",
    "StoredCase",
    "UiCase",
    "case_source",
    "cases_module",
    "explain",
]
