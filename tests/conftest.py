from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from _postgres import Cluster, unavailable_reason

pytest_plugins = ["niceeval.testing.pytest_plugin"]


@pytest.fixture(autouse=True, scope="session")
def _no_github_actions() -> Iterator[None]:
    """GitHub output stays off in every test and in the commands tests start, unless a test turns it on.

    On a GitHub runner `niceeval run` would otherwise annotate, append to the job's step summary and print
    `::stop-commands::` into outputs that tests compare line by line.
    """
    with pytest.MonkeyPatch.context() as patch:
        for name in ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY", "GITHUB_WORKSPACE"):
            patch.delenv(name, raising=False)
        yield


def _unavailable(reason: str) -> None:
    """Skip a test that needs a service, except in CI, where the service must be there."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true but {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def postgres() -> Iterator[Cluster]:
    """A throwaway PostgreSQL cluster for the whole session (started on first use)."""
    reason = unavailable_reason()
    if reason is not None:
        _unavailable(reason)
    cluster = Cluster()
    try:
        cluster.start()
    except (OSError, RuntimeError) as exc:
        cluster.stop()
        _unavailable(f"PostgreSQL did not start: {exc}")
    yield cluster
    cluster.stop()


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh, empty results store: a SQLite file, or a new database in the session's PostgreSQL cluster."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'results.db'}"
    cluster: Cluster = request.getfixturevalue("postgres")
    return cluster.database()
