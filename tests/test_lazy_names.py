"""`niceeval._core.lazy`: the one `__getattr__` of every package whose public names load on first use."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

PACKAGE = '''\
from niceeval._core.lazy import lazy_getattr

__all__ = ["answer", "helper"]
__getattr__ = lazy_getattr(
    __name__,
    {"answer": "._heavy", "helper": "lazy_probe._light"},
    gone={"old_answer": "lazy_probe.old_answer is now lazy_probe.answer: write `from lazy_probe import answer`"},
)
'''


@pytest.fixture
def probe(tmp_path: Path) -> Iterator[ModuleType]:
    """A package of two modules, `_heavy` and `_light`, behind `lazy_getattr`."""
    root = tmp_path / "lazy_probe"
    root.mkdir()
    (root / "__init__.py").write_text(PACKAGE)
    (root / "_heavy.py").write_text("answer = 42\n")
    (root / "_light.py").write_text("def helper() -> str:\n    return 'light'\n")
    sys.path.insert(0, str(tmp_path))
    try:
        yield importlib.import_module("lazy_probe")
    finally:
        sys.path.remove(str(tmp_path))
        for name in [m for m in sys.modules if m == "lazy_probe" or m.startswith("lazy_probe.")]:
            del sys.modules[name]


def test_a_lazy_name_loads_its_module_on_first_use_and_is_kept(probe: ModuleType) -> None:
    assert "lazy_probe._heavy" not in sys.modules and "answer" not in vars(probe)
    from lazy_probe import answer  # type: ignore[import-not-found]

    assert answer == 42 and vars(probe)["answer"] == 42  # kept: the next lookup is a plain attribute read
    assert "lazy_probe._light" not in sys.modules  # only the module of the name asked for


def test_a_home_may_be_named_absolute_or_relative(probe: ModuleType) -> None:
    assert probe.helper() == "light" and probe.answer == 42


def test_a_removed_name_says_what_to_write_instead(probe: ModuleType) -> None:
    with pytest.raises(ImportError, match=r"now lazy_probe\.answer: write `from lazy_probe import answer`") as raised:
        from lazy_probe import old_answer  # type: ignore[import-not-found]  # noqa: F401
    assert raised.value.name == "old_answer"


def test_an_unknown_name_is_an_attribute_error_naming_the_package(probe: ModuleType) -> None:
    with pytest.raises(AttributeError, match=r"module 'lazy_probe' has no attribute 'nothing'"):
        probe.nothing  # noqa: B018
