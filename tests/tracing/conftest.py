"""The tracing tests run on asyncio (the SDKs' own loop)."""

import pytest


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
