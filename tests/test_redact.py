"""Secrets are replaced in every string of a run record, and only secrets are."""

from __future__ import annotations

from niceeval._core.errors import ErrorInfo
from niceeval._core.events import MessageEvent
from niceeval._core.redact import Redactor
from niceeval._core.results import RunResult

KEY = "sk-live-abcdefgh12345678"


def run_with(text: str, **extra: object) -> RunResult:
    return RunResult.model_validate(
        dict(
            eval_id="e.py::x",
            file="e.py",
            line=1,
            outcome="failed",
            duration_s=0.1,
            events=[MessageEvent(role="assistant", text=text)],
            **extra,
        )
    )


def test_secret_environment_values_are_replaced_everywhere_in_a_run() -> None:
    redactor = Redactor.from_environment({"OPENAI_API_KEY": KEY, "HOME": "/home/someone"})
    run = redactor.run(run_with(f"key={KEY}", error=ErrorInfo(type="E", message=f"bad {KEY}", traceback=KEY)))
    assert run.events[0].text == "key=[redacted:OPENAI_API_KEY]"  # type: ignore[union-attr]
    assert run.error is not None and run.error.message == "bad [redacted:OPENAI_API_KEY]"
    assert run.error.traceback == "[redacted:OPENAI_API_KEY]"


def test_a_run_without_secrets_is_returned_unchanged() -> None:
    original = run_with("nothing to hide in /home/someone")
    assert Redactor.from_environment({"OPENAI_API_KEY": KEY, "HOME": "/home/someone"}).run(original) is original


def test_short_values_and_non_secret_variables_are_not_redacted() -> None:
    redactor = Redactor.from_environment({"API_KEY": "x1", "PATH": "/usr/local/bin/tool"})
    assert redactor.text("x1 /usr/local/bin/tool") == "x1 /usr/local/bin/tool"


def test_a_secret_next_to_a_lone_surrogate_is_still_replaced() -> None:
    run = Redactor.from_environment({"TOKEN": KEY}).run(run_with(f"\ud800{KEY}"))
    assert run.events[0].text == "\ud800[redacted:TOKEN]"  # type: ignore[union-attr]


def test_extra_values_given_in_code_are_redacted_too() -> None:
    assert Redactor.from_environment({}, extra=[KEY]).text(f"-> {KEY}") == "-> [redacted]"


_PIECES = [
    "Bearer ", "basic\t", "Token  ", "token=", "TOKEN: ", '"token": ', '"first_token": null', '"input_tokens": 3',
    '"access-token":"', '"proxy-authorization": "', "x-api-key: ", "apikey=", '"api_key": ""', "secret", "Passwd=",
    "sk-", "sk-proj-", "rk-test-", "ghp_", "xoxb-", "AKIA", "AKIAABCDEFGHIJKLMNOP", "://", "postgres://", "user:",
    "@", "/", " ", '"', "'", ",", ".", "_", "-", ":", "=", "[redacted]", "abcdefgh", "ABCDEFGH12345678",
    "0123456789abcdefghij", "İ", "é", "\n",
]  # fmt: skip


def test_the_marker_guided_check_finds_exactly_what_the_full_patterns_find() -> None:
    """`credential_shaped` only tries the patterns where a marker occurs; on texts built from the patterns' own
    pieces it must agree with scanning every position (the definition `scrub_text` applies)."""
    import random

    from niceeval._core.redact import _KEY_IN_JSON, _SECRET_TEXT, _pattern, credential_shaped

    rng = random.Random(20261124)
    found = 0
    for _ in range(20_000):
        text = "".join(rng.choice(_PIECES) for _ in range(rng.randint(1, 12)))
        expected = _pattern(_SECRET_TEXT).search(text) is not None or _pattern(_KEY_IN_JSON).search(text) is not None
        assert credential_shaped(text) is expected, text
        found += expected
    assert 2_000 < found < 18_000  # both answers were exercised
