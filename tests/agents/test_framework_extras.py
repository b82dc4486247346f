"""Framework adapters import their framework lazily; a missing one names the extra to install."""

from __future__ import annotations

import subprocess
import sys

import pytest


def python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)


def test_importing_the_agents_package_loads_no_framework() -> None:
    code = (
        "import sys, niceeval.agents\n"
        "from niceeval.agents import langgraph_agent, openai_agents_agent, pydantic_ai_agent\n"
        "print(sorted(m for m in ('agents', 'pydantic_ai', 'langgraph', 'langchain_core') if m in sys.modules))\n"
    )
    done = python(code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize(
    ("module", "factory", "extra"),
    [
        ("agents", "openai_agents_agent", "openai-agents"),
        ("pydantic_ai", "pydantic_ai_agent", "pydantic-ai"),
        ("langgraph", "langgraph_agent", "langgraph"),
    ],
)
def test_a_missing_framework_names_the_extra_to_install(module: str, factory: str, extra: str) -> None:
    code = (
        f"import sys; sys.modules[{module!r}] = None\n"
        f"from niceeval.agents import {factory}\n"
        f"{factory}(object())\n"
    )
    done = python(code)
    assert done.returncode == 1
    assert f"pip install 'niceeval[{extra}]'" in done.stderr
    assert "ImportError" in done.stderr
