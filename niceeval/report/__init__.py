"""Reporters: sinks of finished runs (console, JSON, JUnit)."""

from niceeval.report._base import Reporter, ReporterSet
from niceeval.report.console import ConsoleReporter
from niceeval.report.json_report import JSON_SCHEMA_VERSION, JsonReporter
from niceeval.report.junit import JUnitReporter

__all__ = ["JSON_SCHEMA_VERSION", "ConsoleReporter", "JUnitReporter", "JsonReporter", "Reporter", "ReporterSet"]
