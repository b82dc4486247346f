"""Why a suite stopped early, as the process learnt it: Ctrl-C, or SIGTERM (what CI systems and container runtimes
send). The command line records SIGTERM here when it arrives; the suite reads it into its summary, so the exit
code every report states (130 for Ctrl-C, 143 for SIGTERM) is the one the process exits with."""

from __future__ import annotations

_terminated = False


def mark_terminated() -> None:
    """SIGTERM arrived: the suite being cancelled now was terminated, not interrupted by Ctrl-C."""
    global _terminated
    _terminated = True


def clear_terminated() -> None:
    """Forget an earlier SIGTERM (`main()` called again in the same process)."""
    global _terminated
    _terminated = False


def was_terminated() -> bool:
    """Whether SIGTERM arrived since the last `clear_terminated()`."""
    return _terminated
