"""`niceeval.render`: what the HTML report and the viewer both render, and nothing of either room."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import jinja2
import pytest

import niceeval.render
from niceeval.render import environment

ROOT = Path(niceeval.render.__file__).resolve().parent.parent


def test_render_exports() -> None:
    assert sorted(niceeval.render.__all__) == sorted(
        [
            "STATIC_DIR",
            "TEXT_LIMIT",
            "JudgeModelUse",
            "Round",
            "VariantRow",
            "VariantTable",
            "commands",
            "environment",
            "estimate_json",
            "eval_points",
            "eval_points_text",
            "eval_rate",
            "folded_case_rate",
            "folded_points",
            "folded_points_text",
            "folded_power",
            "folded_rate",
            "interval_text",
            "percent",
            "points_text",
            "power_text",
            "rate_over_cases",
            "rounds",
            "runs_rate",
            "suite_points",
            "suite_points_text",
            "suite_power",
            "suite_rate",
            "weighted_mean_over_cases",
            "when",
        ]
    )
    for name in niceeval.render.__all__:
        assert hasattr(niceeval.render, name), name


def test_collecting_the_variants_table_loads_no_template_engine() -> None:
    """The console and the JSON report collect the table after every run: Jinja2 loads only for a page."""
    code = (
        "import sys\n"
        "from niceeval.render import VariantTable\n"
        "from niceeval.report import ConsoleReporter, JsonReporter\n"
        "VariantTable()\n"
        "print(sorted(m for m in ('jinja2', 'starlette') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize("room", ["web", "report"])
def test_a_rooms_page_never_shadows_a_shared_part(room: str) -> None:
    """A room's templates are searched first: one named like a shared part would make the two rooms differ."""
    own = {p.name for p in (ROOT / room / "templates").iterdir()}
    shared = {p.name for p in (ROOT / "render" / "templates").iterdir()}
    assert own and shared and own & shared == set()


def test_the_viewer_and_the_report_render_the_same_run_detail() -> None:
    parts = "{% import '_run_detail.html' as d %}{{ d.error_panel(error) }}"
    error = {"kind": "error", "type": "KeyError", "message": "<b>'sku'</b>", "location": "a.py:3", "traceback": ""}
    shown = [environment(f"niceeval.{room}").from_string(parts).render(error=error) for room in ("web", "report")]
    assert shown[0] == shown[1]
    assert "&lt;b&gt;&#39;sku&#39;&lt;/b&gt;" in shown[0]  # model and eval text is escaped, never markup


def test_a_rooms_own_functions_are_its_pages_alone() -> None:
    """The viewer's lists draw an outcome bar; the report's environment has none, and says so."""
    from niceeval.web._pages import pages

    bar = "{{ outcome_bar(1, 0, 1, 0) }}"
    assert pages().from_string(bar).render().startswith("<svg")
    with pytest.raises(jinja2.UndefinedError, match="outcome_bar"):
        environment("niceeval.report").from_string(bar).render()
