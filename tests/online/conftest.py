"""The online tests run on asyncio (the receiver's uvicorn and the SDKs' own loop)."""

import pytest


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
