"""`-k EXPRESSION`: pytest's grammar, so `-k "refund and not slow"` means what a pytest user expects.

    expression := or_expr
    or_expr    := and_expr ("or" and_expr)*
    and_expr   := not_expr ("and" not_expr)*
    not_expr   := "not" not_expr | "(" or_expr ")" | word

A word matches an eval whose id contains it, ignoring case (`-k refund` keeps `evals/support.py::refund_request`).
A malformed expression is a `ConfigError` naming the column and what was expected.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from niceeval._core.errors import ConfigError

_TOKEN = re.compile(r"\s*(?:(?P<paren>[()])|(?P<word>[\w:+\-.\[\]\\/]+)|(?P<other>\S))")
_OPERATORS = ("and", "or", "not")
Predicate = Callable[[str], bool]


@dataclass(frozen=True, slots=True)
class _Token:
    text: str
    column: int
    """1-based, for messages."""
    kind: str
    """`(`, `)`, `and`, `or`, `not`, `word`, `end`."""


def compile_keyword(expression: str) -> Predicate:
    """A predicate over eval ids for `-k expression`; `ConfigError` when the expression is malformed."""
    parser = _Parser(expression)
    if parser.peek().kind == "end":
        raise ConfigError(f"-k {expression!r}: the expression is empty; write a part of an eval's id, e.g. -k refund.")
    predicate = parser.or_expr()
    parser.expect("end")
    return predicate


class _Parser:
    def __init__(self, expression: str) -> None:
        self.expression = expression
        self.tokens = list(_tokens(expression))
        self.position = 0

    def peek(self) -> _Token:
        return self.tokens[self.position]

    def take(self) -> _Token:
        token = self.tokens[self.position]
        self.position += 1
        return token

    def expect(self, kind: str) -> _Token:
        token = self.peek()
        if token.kind != kind:
            wanted = {"end": "the end (or `and`/`or`)", ")": "`)`", "word": "a part of an eval's id"}[kind]
            seen = "the end" if token.kind == "end" else f"{token.text!r}"
            raise ConfigError(
                f"-k {self.expression!r}: expected {wanted} at column {token.column}, found {seen}. -k takes "
                "pytest's grammar: parts of eval ids joined by `and`, `or`, `not` and parentheses, "
                'e.g. -k "refund and not slow".'
            )
        return self.take()

    def or_expr(self) -> Predicate:
        parts = [self.and_expr()]
        while self.peek().kind == "or":
            self.take()
            parts.append(self.and_expr())
        return parts[0] if len(parts) == 1 else (lambda name: any(part(name) for part in parts))

    def and_expr(self) -> Predicate:
        parts = [self.not_expr()]
        while self.peek().kind == "and":
            self.take()
            parts.append(self.not_expr())
        return parts[0] if len(parts) == 1 else (lambda name: all(part(name) for part in parts))

    def not_expr(self) -> Predicate:
        token = self.peek()
        if token.kind == "not":
            self.take()
            inner = self.not_expr()
            return lambda name: not inner(name)
        if token.kind == "(":
            self.take()
            inner = self.or_expr()
            self.expect(")")
            return inner
        needle = self.expect("word").text.lower()
        return lambda name: needle in name.lower()


def _tokens(expression: str) -> list[_Token]:
    found: list[_Token] = []
    position = 0
    while position < len(expression):
        match = _TOKEN.match(expression, position)
        if match is None:  # only trailing whitespace is left
            break
        column = match.start(match.lastgroup or 0) + 1
        if match.group("paren"):
            found.append(_Token(match.group("paren"), column, match.group("paren")))
        elif match.group("word"):
            word = match.group("word")
            found.append(_Token(word, column, word if word in _OPERATORS else "word"))
        else:
            raise ConfigError(
                f"-k {expression!r}: {match.group('other')!r} at column {column} is not part of an eval's id or of "
                'pytest\'s -k grammar (words, and, or, not, parentheses), e.g. -k "refund and not slow".'
            )
        position = match.end()
    found.append(_Token("", len(expression) + 1, "end"))
    return found
