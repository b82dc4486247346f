"""Fixtures of the end-to-end suite."""

from __future__ import annotations

from pathlib import Path

import pytest

from ._project import Project, make_project


@pytest.fixture
def project(tmp_path: Path) -> Project:
    """An empty project whose config sets an echo agent (`"echo: " + message`)."""
    return make_project(tmp_path)
