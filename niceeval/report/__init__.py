"""Reporters: sinks of finished runs (console, JSON, JUnit).

Names load on first use: a run imports the reporters it writes, nothing more.

Design: docs/design/report.md
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from niceeval._core.lazy import lazy_getattr

if TYPE_CHECKING:
    from niceeval.report._base import Reporter, ReporterSet
    from niceeval.report.console import ConsoleReporter
    from niceeval.report.json_report import JSON_SCHEMA_VERSION, JsonReporter
    from niceeval.report.junit import JUnitReporter

_HOMES = {
    "Reporter": "niceeval.report._base",
    "ReporterSet": "niceeval.report._base",
    "ConsoleReporter": "niceeval.report.console",
    "JSON_SCHEMA_VERSION": "niceeval.report.json_report",
    "JsonReporter": "niceeval.report.json_report",
    "JUnitReporter": "niceeval.report.junit",
}

__all__ = ["JSON_SCHEMA_VERSION", "ConsoleReporter", "JUnitReporter", "JsonReporter", "Reporter", "ReporterSet"]

__getattr__ = lazy_getattr(__name__, _HOMES)


def __dir__() -> list[str]:
    return sorted(__all__)
