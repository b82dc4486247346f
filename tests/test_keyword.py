"""`-k`: pytest's expression grammar over eval ids, and a malformed expression named with its column."""

from __future__ import annotations

import pytest

from niceeval._core.errors import ConfigError
from niceeval._run.keyword import compile_keyword

IDS = [
    "evals/support.py::refund_request",
    "evals/support.py::refund_slow_path",
    "evals/support.py::greets",
    "evals/billing.py::invoice",
    "evals/billing.py::legacy_invoice",
]


def chosen(expression: str) -> list[str]:
    matches = compile_keyword(expression)
    return [name.split("::")[1] for name in IDS if matches(name)]


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("refund", ["refund_request", "refund_slow_path"]),
        ("REFUND", ["refund_request", "refund_slow_path"]),
        ("refund and not slow", ["refund_request"]),
        ("greets or invoice", ["greets", "invoice", "legacy_invoice"]),
        ("billing and not legacy or greets", ["greets", "invoice"]),
        ("not (support or legacy)", ["invoice"]),
        ("not not greets", ["greets"]),
        ("billing.py::legacy_invoice", ["legacy_invoice"]),
        ("  refund   and   request  ", ["refund_request"]),
    ],
)
def test_k_follows_pytests_grammar(expression: str, expected: list[str]) -> None:
    assert chosen(expression) == expected


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("refund and", r"expected a part of an eval's id at column 11, found the end"),
        ("refund request", r"expected the end \(or `and`/`or`\) at column 8, found 'request'"),
        ("(refund or greets", r"expected `\)` at column 18, found the end"),
        ("refund & slow", r"'&' at column 8 is not part of an eval's id"),
        ("   ", r"the expression is empty"),
        ("or greets", r"expected a part of an eval's id at column 1, found 'or'"),
    ],
)
def test_a_malformed_k_expression_names_the_column_and_the_grammar(expression: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as caught:
        compile_keyword(expression)
    assert f"-k {expression!r}" in str(caught.value)
