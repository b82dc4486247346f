"""The agent adapter tests run on asyncio (the SDKs' own loop), against the local LLM server on 127.0.0.1."""

import pytest


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def _checkpoints_in_tmp(tmp_path: object, monkeypatch: pytest.MonkeyPatch) -> None:
    """Model agents keep checkpoints under `.niceeval/` in the working directory: keep that out of the repo."""
    monkeypatch.chdir(str(tmp_path))
