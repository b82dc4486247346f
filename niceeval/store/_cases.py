"""Test cases written in the viewer: kept in the store with every version, run by `niceeval run` as `ui::NAME`.

A case is data (pydantic: it is stored, sent by a form and loaded by the runner): a name, a description, tags,
one or more rounds (the user prompt, the judge criteria, the threshold), the tools the agent is expected to
call, and "revival" (close the session after round 1 and continue from storage). Every save and delete adds a
version, so a case's history survives its deletion; saving against a version that is no longer the latest is
refused, so two people editing one case never overwrite each other silently.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from sqlalchemy import Connection, RowMapping, false, insert, select, update

from niceeval.store._open import StoreError, write_transaction
from niceeval.store._schema import ui_case_versions, ui_cases
from niceeval.store._store import Store

NAME_PATTERN = re.compile(r"^[a-z][a-z0-9_]{0,62}$")
TAG_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,39}$")
TOOL_PATTERN = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,99}$")
MAX_ROUNDS = 20
DEFAULT_THRESHOLD = 0.7


class CaseRound(BaseModel):
    """One round: what the user sends, and what the judge should find in the reply."""

    model_config = ConfigDict(extra="forbid")

    prompt: str = Field(max_length=20_000)
    """The user message sent to the agent."""
    criteria: str = Field(default="", max_length=10_000)
    """What a good reply does, for the judge (empty: the round is sent but not judged)."""
    threshold: float = DEFAULT_THRESHOLD
    """The judge's score must reach this (0 to 1)."""

    @field_validator("prompt")
    @classmethod
    def _prompt(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("write the message the user sends in this round")
        return value.strip()

    @field_validator("criteria")
    @classmethod
    def _criteria(cls, value: str) -> str:
        return value.strip()

    @field_validator("threshold")
    @classmethod
    def _threshold(cls, value: float) -> float:
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"a threshold is between 0 and 1 (e.g. 0.7), not {value:g}")
        return value


class UiCase(BaseModel):
    """A test case written in the viewer; `niceeval run` runs it as the eval `ui::NAME`."""

    model_config = ConfigDict(extra="forbid")

    name: str
    """Lowercase letters, digits and underscores, starting with a letter (it becomes a Python function name)."""
    description: str = Field(default="", max_length=5_000)
    tags: list[str] = Field(default_factory=list)
    rounds: list[CaseRound]
    expected_tools: list[str] = Field(default_factory=list)
    """Tools the agent must call during the case (each checked with `t.called_tool`)."""
    revival: bool = False
    """Close the agent session after round 1 and reopen it by id before round 2 (tests state from storage)."""

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        value = value.strip()
        if not NAME_PATTERN.fullmatch(value):
            raise ValueError(
                "use lowercase letters, digits and underscores, starting with a letter (e.g. refund_request)"
            )
        return value

    @field_validator("tags")
    @classmethod
    def _tags(cls, value: list[str]) -> list[str]:
        return _distinct_words(value, TAG_PATTERN, "tags are words of letters, digits, '-', '_' or '.'")

    @field_validator("expected_tools")
    @classmethod
    def _tools(cls, value: list[str]) -> list[str]:
        return _distinct_words(value, TOOL_PATTERN, "a tool is named like a function (e.g. lookup_order)")

    @field_validator("rounds")
    @classmethod
    def _rounds(cls, value: list[CaseRound]) -> list[CaseRound]:
        if not 1 <= len(value) <= MAX_ROUNDS:
            raise ValueError(f"a case has 1 to {MAX_ROUNDS} rounds")
        return value

    @model_validator(mode="after")
    def _revival(self) -> UiCase:
        if self.revival and len(self.rounds) < 2:
            raise ValueError("revival continues the conversation in round 2: add a second round, or untick it")
        return self

    @property
    def eval_id(self) -> str:
        """The id its runs are stored and reported under."""
        return f"ui::{self.name}"


def _distinct_words(values: list[str], pattern: re.Pattern[str], rule: str) -> list[str]:
    """`values` without repeats, each a whole match of `pattern`; else the error states `rule` and the misfits."""
    bad = [value for value in values if not pattern.fullmatch(value)]
    if bad:
        raise ValueError(f"{rule}: {', '.join(bad)!s} is not")
    return list(dict.fromkeys(values))


class StoredCase(BaseModel):
    """A case as the store holds it: the latest version, with when it was made and last saved."""

    case: UiCase
    version: int
    created_at: datetime
    updated_at: datetime


class CaseVersion(BaseModel):
    """One saved version of a case."""

    name: str
    version: int
    action: Literal["created", "edited", "deleted"]
    case: UiCase
    saved_at: datetime


class CaseError(StoreError):
    """A case cannot be saved as asked (the name is taken, it changed meanwhile, it does not exist)."""


class CaseBook:
    """The viewer-written test cases of a `Store`: list, read, create, edit, delete, history.

    Args:
        store: The results store the cases live in.
    """

    def __init__(self, store: Store) -> None:
        self.store = store

    def cases(self) -> list[StoredCase]:
        """Every case that is not deleted, by name."""
        query = select(ui_cases).where(ui_cases.c.deleted == false()).order_by(ui_cases.c.name)
        with self.store.engine.connect() as conn:
            return [_stored(row) for row in conn.execute(query).mappings()]

    def get(self, name: str) -> StoredCase | None:
        """The case `name`, or None when there is none (or it was deleted)."""
        query = select(ui_cases).where(ui_cases.c.name == name, ui_cases.c.deleted == false())
        with self.store.engine.connect() as conn:
            row = conn.execute(query).mappings().first()
        return None if row is None else _stored(row)

    def create(self, case: UiCase) -> StoredCase:
        """Save a new case. Raises `CaseError` when a case of that name exists."""
        with write_transaction(self.store.engine) as conn:
            row = conn.execute(select(ui_cases).where(ui_cases.c.name == case.name)).mappings().first()
            now = datetime.now(UTC)
            fields = {"content": case.model_dump(), "created_at": now, "updated_at": now, "deleted": False}
            if row is None:
                version = 1
                conn.execute(insert(ui_cases).values(name=case.name, version=version, **fields))
            elif row["deleted"]:
                version = row["version"] + 1
                conn.execute(update(ui_cases).where(ui_cases.c.name == case.name).values(version=version, **fields))
            else:
                raise CaseError(f"a case named {case.name!r} exists already; pick another name or edit that one.")
            _version(conn, case, version, "created", now)
        return StoredCase(case=case, version=version, created_at=now, updated_at=now)

    def update(self, case: UiCase, *, expected_version: int) -> StoredCase:
        """Save a new version of `case.name`, if its latest version is still `expected_version`."""
        with write_transaction(self.store.engine) as conn:
            row = self._current(conn, case.name, expected_version)
            now = datetime.now(UTC)
            version = row["version"] + 1
            conn.execute(update(ui_cases).where(ui_cases.c.name == case.name).values(
                version=version, content=case.model_dump(), updated_at=now))  # fmt: skip
            _version(conn, case, version, "edited", now)
        return StoredCase(case=case, version=version, created_at=row["created_at"], updated_at=now)

    def delete(self, name: str, *, expected_version: int) -> None:
        """Delete the case (its history stays), if its latest version is still `expected_version`."""
        with write_transaction(self.store.engine) as conn:
            row = self._current(conn, name, expected_version)
            now = datetime.now(UTC)
            version = row["version"] + 1
            conn.execute(update(ui_cases).where(ui_cases.c.name == name).values(
                version=version, deleted=True, updated_at=now))  # fmt: skip
            _version(conn, UiCase.model_validate(row["content"]), version, "deleted", now)

    def history(self, name: str) -> list[CaseVersion]:
        """Every version of the case `name`, newest first (deleted cases included)."""
        query = (
            select(ui_case_versions).where(ui_case_versions.c.name == name).order_by(ui_case_versions.c.version.desc())
        )
        with self.store.engine.connect() as conn:
            return [
                CaseVersion(name=r["name"], version=r["version"], action=r["action"],
                            case=UiCase.model_validate(r["content"]), saved_at=r["saved_at"])
                for r in conn.execute(query).mappings()
            ]  # fmt: skip

    @staticmethod
    def _current(conn: Connection, name: str, expected_version: int) -> RowMapping:
        row = conn.execute(select(ui_cases).where(ui_cases.c.name == name)).mappings().first()
        if row is None or row["deleted"]:
            raise CaseError(f"there is no case named {name!r} (it may have been deleted meanwhile).")
        if row["version"] != expected_version:
            raise CaseError(
                f"case {name!r} was changed by someone else meanwhile (now version {row['version']}, you edited "
                f"version {expected_version}); reload it and make your change again."
            )
        return row


def _stored(row: RowMapping) -> StoredCase:
    return StoredCase(
        case=UiCase.model_validate(row["content"]),
        version=row["version"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
    )


def _version(conn: Connection, case: UiCase, version: int, action: str, now: datetime) -> None:
    conn.execute(insert(ui_case_versions).values(name=case.name, version=version, action=action,
                                                 content=case.model_dump(), saved_at=now))  # fmt: skip


def explain(error: ValidationError) -> dict[str, str]:
    """Validation errors by field (`name`, `rounds.0.prompt`, ...), each in plain words."""
    found: dict[str, str] = {}
    for item in error.errors():
        where = ".".join(str(part) for part in item["loc"]) or "case"
        message = item["msg"].removeprefix("Value error, ")
        if item["type"] == "float_parsing":
            message = "write a number between 0 and 1 (e.g. 0.7)"
        elif item["type"] == "string_too_long":
            message = f"too long: at most {item['ctx']['max_length']:,} characters"
        found.setdefault(where, message)
    return found
