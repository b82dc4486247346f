"""A shortened value never holds a piece of a secret: values are scrubbed whole, then cut."""

from __future__ import annotations

import pytest

from niceeval._core.redact import Redactor, redacting
from niceeval._core.values import head, head_of_stream, short, tail, tail_of_stream

ENV_SECRET = "correcthorsebatterystaple"
"""A declared secret (an environment variable named like a password) that looks like no credential."""
SHAPES = {
    "bearer token": ("Authorization: Bearer ", "eyJhbGciOiJIUzI1NiJ9.bearerpayload", ""),
    "basic credentials": ("Authorization: Basic ", "QWxhZGRpbjpvcGVuIHNlc2FtZQ==", ""),
    "token scheme": ("Token ", "tk9f8e7d6c5b4a3Z2Y1X", ""),
    "field value": ("x-api-key: ", "xapikeyvalue-7f3a9c2e1d", ""),
    "assigned value": ("password=", "swordfishes", ""),
    "URL token": ("https://api.example/v1?access_token=", "accesstoken-1a2b3c4d5e6f", "&page=2"),
    "sk-proj key": ("key ", "sk-proj-Zq8vN2xLmK4pR7tY1wE3uI9oAplanted", ""),
    "AWS access key": ("aws ", "AKIAZQ8XW2LMN4PR7TYQ", ""),
    "GitHub token": ("gh ", "ghp_R8s2Kq7Vw3Xz9Lm4Np6Tb1Yc5Hd0Jf", ""),
    "Slack token": ("slack ", "xoxb-9988776655-Qw3Er5Ty7Ui9", ""),
    "database URL password": ("postgresql://app:", "Hu7nt3r2-dbPw9xQ", "@db.internal:5432/prod"),
    "declared secret": ("env ", ENV_SECRET, ""),
}


def fragments(secret: str) -> set[str]:
    """Every 8 characters in a row of `secret`."""
    return {secret[i : i + 8] for i in range(len(secret) - 7)}


def leaked(shown: str) -> list[str]:
    return [name for name, (_, secret, _) in SHAPES.items() if any(piece in shown for piece in fragments(secret))]


def planted(shape: str, start: int, length: int) -> str:
    """A text of `length` characters (at least) holding `shape` with its secret starting at `start`."""
    prefix, secret, suffix = SHAPES[shape]
    before = max(0, start - len(prefix))
    text = "." * max(0, before - 1) + " " * (before > 0) + prefix + secret + suffix + " "
    return text + "." * max(0, length - len(text))


@pytest.fixture(autouse=True)
def declared_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEPLOY_PASSWORD", ENV_SECRET)


@pytest.mark.parametrize("shape", SHAPES)
def test_a_secret_at_every_offset_around_the_cuts_of_short_leaves_no_piece(shape: str) -> None:
    """`short` keeps the first 77 and the last 78 characters of a long string: the secret is planted before, across
    and after each cut, in a string, a list, a dict and an object's repr."""
    secret = SHAPES[shape][1]
    length = 400

    class Holder:
        def __init__(self, text: str) -> None:
            self.text = text

        def __repr__(self) -> str:
            return f"Holder({self.text})"

    for start in range(max(0, 77 - len(secret) - 4), 82):
        text = planted(shape, start, length)
        shown = [short(text), short([text]), short({"reply": text}), short(Holder(text))]
        assert leaked("\n".join(shown)) == [], (start, shown)
    for kept_after in range(-4, len(secret) + 4):  # the tail: the secret ends `kept_after` past the cut
        start = length - 78 - len(secret) + kept_after
        text = planted(shape, start, length)[:length]
        assert len(text) == length and secret in text
        assert leaked(short(text) + short([text]) + short(Holder(text))) == [], (kept_after, short(text))


@pytest.mark.parametrize("shape", SHAPES)
def test_head_and_tail_cut_a_scrubbed_value(shape: str) -> None:
    secret = SHAPES[shape][1]
    text = planted(shape, 60, 300)
    at = text.index(secret)
    for limit in range(at - 2, at + len(secret) + 2):
        assert leaked(head(text, limit)) == [], limit
        assert leaked(tail(text, len(text) - limit)) == [], limit


def test_a_short_value_is_scrubbed_before_its_repr_escapes_it() -> None:
    """A repr writes a newline or a tab as `\\n` or `\\t`: a key after one has no word boundary left for the
    redactor to find, so even a value too short to be cut is scrubbed first."""
    texts = ["keys:\nAKIAZQ8XW2LMN4PR7TYQ", "a\tsk-proj-Zq8vN2xLmK4pR7tY1wE3uI9oAplanted"]
    for text in (*texts, [f"x\n{SHAPES['GitHub token'][1]}"]):
        assert leaked(short(text)) == [] and leaked(Redactor({}).text(short(text))) == [], text


def test_the_suites_own_secrets_are_scrubbed_before_a_cut() -> None:
    """A key an agent was given in code (not in the environment) is known to `short` inside `redacting`."""
    given = "plainlowercasekeyvalue"
    text = "." * 70 + " " + given + " " + "." * 200
    assert given[:6] in short(text)  # unknown: it looks like no credential
    with redacting(Redactor.from_environment(extra=[given])):
        shown = short(text)
    assert not any(given[i : i + 8] in shown for i in range(len(given) - 7)) and "[redac" in shown


def test_a_stream_cut_at_its_margin_leaves_no_piece() -> None:
    """A capped stream keeps a margin past its cap; the margin's far end may cut a secret, whose piece goes."""
    secret = SHAPES["AWS access key"][1]
    for cut in range(1, len(secret)):
        start = "aws " + secret[cut:] + " and more output " + "x" * 40
        assert leaked(tail_of_stream(start, 30, cut=True)) == []
        end = "x" * 40 + " output then aws " + secret[:cut]
        assert leaked(head_of_stream(end, 50, cut=True)) == []
    assert tail_of_stream("Error: bad thing", 100, cut=False) == "Error: bad thing"
