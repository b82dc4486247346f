"""Secrets are replaced in every string of a run record, and only secrets are."""

from __future__ import annotations

import pytest

from niceeval._core.assertion import AssertionResult
from niceeval._core.errors import ErrorInfo
from niceeval._core.events import MessageEvent
from niceeval._core.redact import Redactor, credential_shaped, scrub_text, scrub_value
from niceeval._core.results import RunResult

KEY = "sk-live-abcdefgh12345678"


def run_with(text: str, **extra: object) -> RunResult:
    fields: dict[str, object] = dict(eval_id="e.py::x", file="e.py", line=1, outcome="failed", duration_s=0.1)
    return RunResult.model_validate({**fields, "events": [MessageEvent(role="assistant", text=text)], **extra})


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


def test_bytes_that_are_not_utf8_become_text_with_each_bad_byte_escaped_and_secrets_still_go() -> None:
    data = {"raw": b"\xff\xfe tail", "nested": [b"ok", (b"\x80", 1)], "key": KEY.encode()}
    run = Redactor.from_environment({"TOKEN": KEY}).run(run_with("hi", events=[], error=None).model_copy(
        update={"events": [MessageEvent(role="assistant", text="b'...'", data=data)]}
    ), storable=True)  # fmt: skip
    assert run.events[0].data == {  # type: ignore[union-attr]
        "raw": "\\xff\\xfe tail", "nested": ["ok", ["\\x80", 1]], "key": "[redacted:TOKEN]",
    }  # fmt: skip
    assert run.eval_id == "e.py::x"
    run.model_dump_json()  # every exit can encode it now


def test_extra_values_given_in_code_are_redacted_too() -> None:
    assert Redactor.from_environment({}, extra=[KEY]).text(f"-> {KEY}") == "-> [redacted]"


_PIECES = [
    "Bearer ", "basic\t", "Token  ", "token=", "TOKEN: ", '"token": ', '"first_token": null', '"input_tokens": 3',
    '"access-token":"', '"proxy-authorization": "', "x-api-key: ", "apikey=", '"api_key": ""', "secret", "Passwd=",
    "sk-", "sk-proj-", "rk-test-", "ghp_", "xoxb-", "AKIA", "AKIAABCDEFGHIJKLMNOP", "://", "postgres://", "user:",
    "@", "/", " ", '"', "'", ",", ".", "_", "-", ":", "=", "[redacted]", "abcdefgh", "ABCDEFGH12345678",
    "0123456789abcdefghij", "İ", "é", "\n", "functionality", "Refresh-works.", "dXNlcjpwYXNz", "Pw9xQ2mL7vK4",
    "2026-11-27", "JavaScript", "ALLCAPSWORD", ": ", " = ", '\\"', '"first_token": 0.5', '"secret": true',
    "tokens", "_tokens", "token_id", "Secrets", "secret2", "apikeys", "api_key_", "Authorizations",
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


KEYWORDS = [
    "Bearer", "Basic", "Token", "Authorization:", "Proxy-Authorization:", "x-api-key:", "api-key:", "API_KEY:",
    "apikey:", "access_token:", "access-token:", "token:", "Secret:", "password:", "Password", "passwd:",
    "Authorization = ", "password = ",
]  # fmt: skip
ORDINARY = [
    "functionality test", "refresh works", "reset flow works.", "forgotten again", "ingredients revealed",
    "rotation-policy applies", "Everything-Changes today", "NOTWORKING yet", "2026-11-27 expiry", "e.g. something",
]  # fmt: skip


@pytest.mark.parametrize("keyword", KEYWORDS)
def test_ordinary_words_after_a_credential_keyword_are_left_alone(keyword: str) -> None:
    for words in ORDINARY:
        text = f"{keyword} {words}"
        assert not credential_shaped(text), text
        assert Redactor({}).text(text) == text
        assert scrub_value({"note": text}) == {"note": text}


HEADERS = {
    "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.bearerpayload": "Authorization: Bearer [redacted]",
    "Authorization: Basic dXNlcjpwYXNz": "Authorization: Basic [redacted]",
    "Authorization: Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==": "Authorization: Basic [redacted]",
    "Authorization: Token 9f8e7d6c5b4a3f2e1d0c": "Authorization: Token [redacted]",
    "x-api-key: xapikeyvalue-7f3a9c2e1d": "x-api-key: [redacted]",
    "password: Pw9xQ2mL7vK4": "password: [redacted]",
    "password=swordfish": "password=[redacted]",  # assigned: a value whatever it looks like
    'secret: "swordfish"': 'secret: "[redacted]"',
    '{"api_key": "swordfish"}': '{"api_key": "[redacted]"}',
    "GET /v1?access_token=accesstoken-1a2b3c4d5e6f&x=1": "GET /v1?access_token=[redacted]&x=1",
    "key sk-proj-Zq8vN2xLmK4pR7tY1wE3uI9oA": "key [redacted]",
    "aws AKIAIOSFODNN7PLANTED.": "aws [redacted].",
    "postgresql://app:swordfish@db.internal:5432/prod": "postgresql://app:[redacted]@db.internal:5432/prod",
}


@pytest.mark.parametrize("text", HEADERS)
def test_real_credential_values_are_removed(text: str) -> None:
    assert credential_shaped(text)
    assert Redactor({}).text(text) == HEADERS[text]


def test_a_run_keeps_its_ids_names_and_paths_whatever_they_say() -> None:
    """Identities are never rewritten, not even when they look like a credential or hold a known secret; what the
    run said is still scrubbed."""
    odd = "Bearer abc123DEF456ghi " + KEY
    run = run_with(
        f"the reply quotes {KEY} and Token 9f8e7d6c5b4a3f2e1d0c",
        eval_id=f"evals/e.py::{odd}",
        file=f"evals/{odd}.py",
        case_id=odd,
        variant={"password: Pw9xQ2mL7vK4": odd},
        group=odd,
        error=ErrorInfo(type="E", message=f"bad {KEY}", location=f"evals/{odd}.py:3"),
        assertions=[
            AssertionResult(
                name="rubric",
                severity="gate",
                score=0.0,
                threshold=1.0,
                state="failed",
                key=odd,
                location=f"evals/{odd}.py:4",
                reason=f"saw {KEY}",
            )
        ],  # fmt: skip
    )
    redacted = Redactor.from_environment({"OPENAI_API_KEY": KEY}).run(run, storable=True)
    kept = ("eval_id", "file", "line", "case_id", "variant", "group")
    assert {name: getattr(redacted, name) for name in kept} == {name: getattr(run, name) for name in kept}
    assert redacted.error is not None and redacted.error.location == f"evals/{odd}.py:3"
    assert (redacted.assertions[0].key, redacted.assertions[0].location) == (odd, f"evals/{odd}.py:4")
    assert redacted.error.message == "bad [redacted:OPENAI_API_KEY]"
    assert redacted.assertions[0].reason == "saw [redacted:OPENAI_API_KEY]"
    assert redacted.events[0].text == (  # type: ignore[union-attr]
        "the reply quotes [redacted:OPENAI_API_KEY] and Token [redacted]"
    )


def test_a_number_in_a_field_named_like_a_credential_is_kept() -> None:
    """`first_token` is a latency: a run holding one and a secret is scrubbed, not broken."""
    message = MessageEvent(role="assistant", text=f"key={KEY}", first_token=0.25, data={"token": 3, "secret": ""})
    run = Redactor({}).run(run_with("hi").model_copy(update={"events": [message]}))
    assert run.events[0] == message.model_copy(update={"text": "key=[redacted]"})


def test_a_run_whose_text_scrubbing_would_change_is_never_taken_for_clean() -> None:
    """A run is checked as one JSON dump, where a newline or a tab is escaped (`\\nAKIA...` has no word boundary);
    whatever `scrub_text` would change in a string, the check of its run finds."""
    import random

    rng = random.Random(20261127)
    changed = 0
    for _ in range(5_000):
        text = "".join(rng.choice(_PIECES) for _ in range(rng.randint(1, 12)))
        run = run_with(text)
        if scrub_text(text) != text:
            changed += 1
            assert Redactor({}).run(run) is not run, text
    assert changed > 500


def test_a_key_on_its_own_line_is_removed() -> None:
    run = Redactor({}).run(run_with("keys:\nAKIAIOSFODNN7PLANTED\n\tsk-proj-Zq8vN2xLmK4pR7tY1wE3uI9oA"))
    assert run.events[0].text == "keys:\n[redacted]\n\t[redacted]"  # type: ignore[union-attr]


_FRAGMENTS = (
    "Bearer ", "Basic ", "token", "api_key", "Authorization", "password", "secret", "sk-", "ghp_", "xoxb-", "AKIA",
    '"', "'", ":", "=", " ", "\\n", "https://", "user:", "@", "x9Qk2LmN8pR4", "ABCDEFGHIJKLMNOP", "plain words",
    "null", "0", "tokens", "input_tokens",
)  # fmt: skip


def _placed(text: str, slot: int) -> RunResult:
    """A run holding `text` in one of the places a run's record keeps text (by `slot`), the others at rest."""
    assertion = {"name": "n", "severity": "gate", "score": 0.0, "threshold": 1.0, "state": "failed"}
    places: list[dict[str, object]] = [
        {"assertions": [{**assertion, "reason": text}]},
        {"assertions": [{**assertion, "actual": text}]},
        {"metadata": {"note": text}},
        {"metadata": {text: "value-of-it"}},
        {"warnings": [text]},
        {"skip_reason": text},
        {"workspace_diff": text},
        {"error": {"type": "E", "message": text}},
        {"variant": {"prompt": text}},
    ]
    fields: dict[str, object] = dict(eval_id="e.py::x", file="e.py", line=1, outcome="failed", duration_s=0.1)
    return RunResult.model_validate({**fields, **places[slot % len(places)]})


def test_a_run_is_found_clean_exactly_when_its_whole_record_holds_nothing_credential_shaped() -> None:
    import random

    from niceeval._core.redact import _unescaped

    rng = random.Random(45)
    redactor = Redactor({})
    found = {True: 0, False: 0}
    for slot in range(3_000):
        text = "".join(rng.choice(_FRAGMENTS) for _ in range(rng.randint(1, 6)))
        run = _placed(text, slot)
        whole = run.model_dump_json(fallback=repr)  # every field, those at their defaults too
        clean = not credential_shaped(_unescaped(whole))
        assert (redactor.run(run) is run) == clean, (text, slot)
        found[clean] += 1
    assert min(found.values()) > 200  # both verdicts were tried many times
