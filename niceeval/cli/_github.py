"""GitHub Actions on the command line: `--github/--no-github` and `--baseline RUN` on `niceeval run` and
`niceeval report`.

Only argparse is imported at module level (`niceeval --help` stays fast).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from niceeval.report.github import GitHubReporter
    from niceeval.store import RunDiff, Store, SuiteRunInfo
    from niceeval.store._recorder import StoreSink


def add_github_flags(run: argparse.ArgumentParser) -> None:
    """`--github/--no-github` and `--baseline RUN`."""
    run.add_argument(
        "--github",
        action=argparse.BooleanOptionalAction,
        help="GitHub Actions annotations and step summary (default: on when GITHUB_ACTIONS=true)",
    )
    run.add_argument(
        "--baseline",
        metavar="RUN",
        help="compare this run with RUN as `niceeval diff RUN <this run>` does, print it (and add it to the GitHub "
        "step summary), and exit 1 for a regression beyond noise (--alpha) or past --max-drop: a stored suite run "
        "id (a unique prefix is enough), or `latest` for the latest suite run other than this one (`latest~1`: "
        "the one before it); empty for none",
    )


def resolve_baseline(args: argparse.Namespace, sink: StoreSink | None) -> str | None:
    """`niceeval run --baseline RUN`, resolved before anything runs: a wrong id exits 2 at once, and `latest` is the
    latest suite run other than this one (`latest` as `niceeval diff` reads it would be this run, once it started).
    """
    return _resolve_baseline(args.baseline, sink) if args.baseline else None


def github_reporters(
    args: argparse.Namespace, sink: StoreSink | None, baseline: str | None, diff: Callable[[], RunDiff] | None
) -> list[GitHubReporter]:
    """The GitHub reporter when `--github` or `GITHUB_ACTIONS=true` (and not `--no-github`), else none; with a
    baseline, its step summary holds `diff()` (the comparison the run's exit code follows)."""
    if not _github_on(args):
        return []  # outside GitHub Actions the reporter is not even imported
    from niceeval.report.github import GitHubOptions, GitHubReporter

    options = GitHubOptions(
        summary_path=_summary_path(),
        workspace=_workspace(),
        strict=args.strict,
        min_pass_rate=args.min_pass_rate,
        min_pass_at_k=args.min_pass_at_k,
        run_id=sink.run_id if sink else None,
    )
    if baseline is not None and diff is not None:
        options.baseline = diff
    return [GitHubReporter(options)]


class ReportBaseline:
    """`niceeval report RUN --baseline BASE [--alpha A] [--max-drop D]`: the reported suite run against BASE, weighed
    as `niceeval run --baseline` weighs a run (the same flags, the same comparison): printed after the report,
    shared with the step summary, and a regression makes the report exit 1."""

    def __init__(self, args: argparse.Namespace, store: Store) -> None:
        self.args = args
        self.store = store
        self.baseline: str | None = None
        self.head: str | None = None
        self._diff: RunDiff | None = None

    def reporters(self, info: SuiteRunInfo) -> list[GitHubReporter]:
        """Resolve `--baseline` against the reported suite run `info` (a wrong id exits 2 before anything is
        printed); the GitHub reporter of the whole suite run, when GitHub output is on."""
        self.baseline, self.head = _report_baseline(self.args, self.store, info), info.id
        return _report_github_reporters(self.args, info, self.diff if self.baseline else None)

    def diff(self) -> RunDiff:
        """The comparison, made once."""
        from niceeval.cli._common import noise_options

        if self._diff is None:
            assert self.baseline is not None and self.head is not None
            self._diff = self.store.diff(self.baseline, self.head, noise_options(self.args))
        return self._diff

    def exit_code(self, code: int) -> int:
        """The report's exit code with the comparison's verdict (unchanged without `--baseline`)."""
        return gated_by_baseline(code, self.baseline, self.diff) if self.baseline is not None else code


def gated_by_baseline(code: int, baseline: str, diff: Callable[[], RunDiff]) -> int:
    """`code` with the verdict of the comparison with `baseline`, printed: 1 at least for a regression beyond noise
    or past `--max-drop`, or when the runs cannot be compared (nothing then says the run is no worse)."""
    from niceeval._core.errors import NiceevalError
    from niceeval.cli._common import EXIT_FAILED
    from niceeval.cli._views import diff_lines

    try:
        found = diff()
    except NiceevalError as exc:
        print(f"niceeval: --baseline {baseline}: {exc}", file=sys.stderr)
        return max(code, EXIT_FAILED)
    for line in diff_lines(found):
        print(line)
    return max(code, EXIT_FAILED) if found.regressed else code


def _report_baseline(args: argparse.Namespace, store: Store, info: SuiteRunInfo) -> str | None:
    from niceeval._core.errors import ConfigError

    if not args.baseline:
        return None
    found = _baseline(store, args.baseline, info.id)
    if found == info.id:
        raise ConfigError(f"--baseline {args.baseline} names the reported suite run itself.")
    return found


def _baseline(store: Store, ref: str, this_run: str) -> str:
    """The suite run `--baseline REF` names: `latest` (and `latest~N`, N before it) counts from the latest suite run
    other than `this_run`, which `latest` as `niceeval diff` reads it could be."""
    from niceeval._core.errors import ConfigError

    head, _, back = ref.partition("~")
    if head != "latest" or (back and not back.isdigit()):
        return store.resolve(ref)
    steps = int(back or 0)
    others = [r.id for r in store.runs(limit=steps + 2) if r.id != this_run]
    if len(others) <= steps:
        held = f"only {len(others)} other suite run{'s' * (len(others) > 1)}" if others else "no other suite run"
        raise ConfigError(f"--baseline {ref}: the results store holds {held} to compare with.")
    return others[steps]


def _report_github_reporters(
    args: argparse.Namespace, info: SuiteRunInfo, diff: Callable[[], RunDiff] | None
) -> list[GitHubReporter]:
    """`niceeval report`'s GitHub reporter: the annotations and step summary of a whole stored suite run (the job
    that gathers a sharded run), with `diff()` in the summary; none when GitHub output is off."""
    if not _github_on(args):
        return []
    from niceeval.report.github import GitHubOptions, GitHubReporter

    options = GitHubOptions(
        summary_path=_summary_path(),
        workspace=_workspace(),
        strict=info.strict,
        min_pass_rate=info.min_pass_rate,
        min_pass_at_k=None,
        run_id=info.id,
    )
    if diff is not None:
        options.baseline = diff
    return [GitHubReporter(options)]


def _github_on(args: argparse.Namespace) -> bool:
    return bool(args.github) if args.github is not None else os.environ.get("GITHUB_ACTIONS") == "true"


def _summary_path() -> Path | None:
    summary = os.environ.get("GITHUB_STEP_SUMMARY") or None
    return Path(summary) if summary else None


def _workspace() -> Path:
    workspace = os.environ.get("GITHUB_WORKSPACE") or None
    return Path(workspace) if workspace else Path.cwd()


def _resolve_baseline(ref: str, sink: StoreSink | None) -> str:
    from niceeval._core.errors import ConfigError

    if sink is None:
        raise ConfigError("--baseline reads the results store; drop --no-store (or turn the store on in the config).")
    try:
        found = _baseline(sink.store, ref, sink.run_id)  # this run: a resumed run, or a shard joining the suite run
        if found == sink.run_id:
            raise ConfigError(f"--baseline {ref} names this suite run itself; give the run to compare against.")
        return found
    except Exception:
        sink.close()
        raise
