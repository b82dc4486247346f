"""Text matchers beyond `includes`: any/all of several, prefixes and suffixes, URLs, Markdown sections (edit
distances are in `_fuzzy`).

Every miss shows the actual text (trimmed) and says what was missing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from niceeval._core.assertion import Matcher, ScoreLike, Verdict
from niceeval._core.errors import UsageError
from niceeval._core.values import head, short, tail

_URL = re.compile(r"https?://[^\s<>\"'`)\]}]+")
_HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$", re.MULTILINE)


def _texts(fn: str, items: object) -> list[str]:
    if isinstance(items, str) or not isinstance(items, Sequence) or not items:
        raise UsageError(
            f"{fn}() takes a non-empty list of strings, e.g. {fn}(['refund', 'order']); got {short(items)}."
        )
    for item in items:
        if not isinstance(item, str):
            raise UsageError(f"{fn}() takes strings; {short(item)} is a {type(item).__name__}.")
    return list(items)


def not_text(value: Any) -> Verdict | None:
    if isinstance(value, str):
        return None
    return Verdict(False, f"expected a string, got {type(value).__name__}", actual=short(value))


def _fold(text: str, case_sensitive: bool) -> str:
    return text if case_sensitive else text.casefold()


def includes_any(items: Sequence[str], *, case_sensitive: bool = True) -> Matcher:
    """Pass when the text contains at least one of `items`."""
    wanted = _texts("includes_any", items)

    def score(value: Any) -> ScoreLike:
        if (wrong := not_text(value)) is not None:
            return wrong
        text = _fold(value, case_sensitive)
        if any(_fold(item, case_sensitive) in text for item in wanted):
            return True
        return Verdict(False, f"none of {short(wanted)} found", actual=short(value))

    return Matcher(name=f"includes_any({short(wanted)})", score_fn=score, expected=f"any of {short(wanted)}")


def includes_all(items: Sequence[str], *, case_sensitive: bool = True) -> Matcher:
    """Pass when the text contains every one of `items`; the score is the share found."""
    wanted = _texts("includes_all", items)

    def score(value: Any) -> ScoreLike:
        if (wrong := not_text(value)) is not None:
            return wrong
        text = _fold(value, case_sensitive)
        missing = [item for item in wanted if _fold(item, case_sensitive) not in text]
        if not missing:
            return True
        share = 1 - len(missing) / len(wanted)
        return Verdict(share, f"missing: {short(missing)}", actual=short(value), passed=False)

    return Matcher(name=f"includes_all({short(wanted)})", score_fn=score, expected=f"all of {short(wanted)}")


def starts_with(prefix: str, *, case_sensitive: bool = True) -> Matcher:
    """Pass when the text starts with `prefix` (leading whitespace counts)."""
    if not isinstance(prefix, str):
        raise UsageError(f"starts_with() takes a string, got {short(prefix)}.")

    def score(value: Any) -> ScoreLike:
        if (wrong := not_text(value)) is not None:
            return wrong
        if _fold(value, case_sensitive).startswith(_fold(prefix, case_sensitive)):
            return True
        return Verdict(False, f"starts with {short(head(value, len(prefix) + 10))}", actual=short(value))

    return Matcher(name=f"starts_with({prefix!r})", score_fn=score, expected=f"starts with {prefix!r}")


def ends_with(suffix: str, *, case_sensitive: bool = True) -> Matcher:
    """Pass when the text ends with `suffix` (trailing whitespace counts)."""
    if not isinstance(suffix, str):
        raise UsageError(f"ends_with() takes a string, got {short(suffix)}.")

    def score(value: Any) -> ScoreLike:
        if (wrong := not_text(value)) is not None:
            return wrong
        if _fold(value, case_sensitive).endswith(_fold(suffix, case_sensitive)):
            return True
        return Verdict(False, f"ends with {short(tail(value, len(suffix) + 10))}", actual=short(value))

    return Matcher(name=f"ends_with({suffix!r})", score_fn=score, expected=f"ends with {suffix!r}")


def urls_in(text: str) -> list[str]:
    """The http(s) URLs in `text`, trailing sentence punctuation dropped."""
    return [url.rstrip(".,;:!?") for url in _URL.findall(text)]


def includes_url(url: str | re.Pattern[str] | None = None) -> Matcher:
    """Pass when the text contains an http(s) URL: any, the given one (a trailing `/` does not matter), or one
    matching a compiled regex."""
    if url is not None and not isinstance(url, str | re.Pattern):
        raise UsageError(f"includes_url() takes nothing, a URL string or a compiled regex; got {short(url)}.")
    shown = "" if url is None else f"/{url.pattern}/" if isinstance(url, re.Pattern) else repr(url)

    def wanted(found: str) -> bool:
        if url is None:
            return True
        if isinstance(url, re.Pattern):
            return url.search(found) is not None
        return found.rstrip("/") == url.rstrip("/")

    def score(value: Any) -> ScoreLike:
        if (wrong := not_text(value)) is not None:
            return wrong
        found = urls_in(value)
        if any(wanted(f) for f in found):
            return True
        seen = f"URLs seen: {short(found)}" if found else "no URL in the text"
        return Verdict(False, seen, actual=short(value))

    return Matcher(name=f"includes_url({shown})", score_fn=score, expected=f"a URL {shown}".strip())


def headings(markdown: str) -> list[str]:
    """The ATX headings (`#`, `##`, ...) of a Markdown text, in order, without the hashes."""
    return [title.strip() for title in _HEADING.findall(markdown)]


def has_sections(titles: Sequence[str]) -> Matcher:
    """Pass when the Markdown text has a heading (any level) for each title, compared case-insensitively; the
    score is the share found."""
    wanted = _texts("has_sections", titles)

    def score(value: Any) -> ScoreLike:
        if (wrong := not_text(value)) is not None:
            return wrong
        seen = headings(value)
        folded = {title.casefold() for title in seen}
        missing = [title for title in wanted if title.casefold() not in folded]
        if not missing:
            return True
        return Verdict(
            1 - len(missing) / len(wanted),
            f"missing sections: {short(missing)}; headings seen: {short(seen)}",
            actual=short(value),
            passed=False,
        )

    return Matcher(name=f"has_sections({short(wanted)})", score_fn=score, expected=f"sections {short(wanted)}")
