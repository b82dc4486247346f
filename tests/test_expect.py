"""The value matchers of niceeval.expect: what passes, what misses, and what each miss says."""

from __future__ import annotations

import re
from typing import Any

import pytest
from pydantic import BaseModel

from niceeval import UsageError
from niceeval.expect import (
    AssertionResult,
    Matcher,
    Verdict,
    equals,
    excludes,
    includes,
    make_assertion,
    matches,
    satisfies,
    similarity,
)


def score(matcher: Matcher, value: Any) -> AssertionResult:
    raw = matcher.score_fn(value)
    assert not hasattr(raw, "__await__"), "use an async test for async matchers"
    return matcher.result(raw, "here.py:1")


class Intent(BaseModel):
    intent: str
    confidence: float = 1.0


def test_includes_finds_a_substring() -> None:
    assert score(includes("regards"), "Kind regards").state == "passed"


def test_includes_miss_says_what_was_missing_and_what_was_seen() -> None:
    result = score(includes("regards"), "Bye")
    assert result.state == "failed"
    assert result.score == 0.0
    assert "'regards' not found" in result.reason
    assert result.actual == "'Bye'"


def test_includes_searches_a_compiled_regex() -> None:
    assert score(includes(re.compile(r"order #\d+")), "your order #42 ships").state == "passed"
    assert score(includes(re.compile(r"order #\d+")), "your order ships").state == "failed"


def test_includes_on_a_list_checks_membership() -> None:
    assert score(includes("b"), ["a", "b"]).state == "passed"
    assert score(includes("c"), ["a", "b"]).state == "failed"


def test_includes_on_a_non_text_value_misses_with_the_type_named() -> None:
    result = score(includes("x"), 42)
    assert result.state == "failed"
    assert "got int" in result.reason


def test_excludes_passes_when_absent_and_misses_when_present() -> None:
    assert score(excludes("sorry"), "All good").state == "passed"
    result = score(excludes(re.compile("sk-[a-z]+")), "key sk-abc")
    assert result.state == "failed"
    assert "was found" in result.reason


def test_includes_rejects_a_non_text_needle_where_it_is_written() -> None:
    with pytest.raises(UsageError, match=r"includes\(\) takes a string or a compiled regex"):
        includes(42)  # type: ignore[arg-type]


def test_equals_passes_on_deep_equality() -> None:
    assert score(equals({"a": [1, {"b": 2}]}), {"a": [1, {"b": 2}]}).state == "passed"


def test_equals_miss_lists_each_difference_by_path() -> None:
    result = score(equals({"intent": "refund", "confidence": 0.95}), {"intent": "ship", "extra": 1})
    assert result.state == "failed"
    assert "$.intent: expected 'refund', got 'ship'" in result.reason
    assert "$.confidence: missing" in result.reason
    assert "$.extra: unexpected key" in result.reason


def test_equals_compares_a_model_with_a_dict_by_its_fields() -> None:
    assert score(equals({"intent": "refund", "confidence": 1.0}), Intent(intent="refund")).state == "passed"


def test_equals_tells_true_from_one() -> None:
    assert score(equals(1), True).state == "failed"


def test_equals_shows_a_line_diff_for_multiline_text() -> None:
    result = score(equals("a\nb\nc"), "a\nB\nc")
    assert "-b" in result.reason and "+B" in result.reason


def test_matches_validates_a_pydantic_model() -> None:
    assert score(matches(Intent), {"intent": "refund"}).state == "passed"
    result = score(matches(Intent), {"confidence": "high"})
    assert result.state == "failed"
    assert "intent: Field required" in result.reason
    assert "confidence:" in result.reason


def test_matches_parses_a_json_string_first() -> None:
    assert score(matches(Intent), '{"intent": "refund"}').state == "passed"


def test_matches_accepts_any_type_pydantic_understands() -> None:
    assert score(matches(list[int]), [1, 2]).state == "passed"
    assert score(matches(list[int]), ["x"]).state == "failed"


def test_matches_checks_a_json_schema_dict() -> None:
    schema = {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}
    assert score(matches(schema), {"id": "usr_1"}).state == "passed"
    result = score(matches(schema), {"id": 3})
    assert result.state == "failed"
    assert "id: 3 is not of type 'string'" in result.reason


def test_matches_with_json_schema_misses_on_text_that_is_not_json() -> None:
    result = score(matches({"type": "object"}), "not json")
    assert result.state == "failed"
    assert "not valid JSON" in result.reason


def test_matches_rejects_an_invalid_json_schema() -> None:
    with pytest.raises(UsageError, match="invalid JSON Schema"):
        matches({"type": "no-such-type"})


def test_matches_rejects_something_that_is_not_a_schema() -> None:
    with pytest.raises(UsageError, match="matches\\(\\) takes a pydantic model class"):
        matches(object())


def test_similarity_is_soft_with_threshold_point_eight() -> None:
    matcher = similarity("hello")
    assert (matcher.severity, matcher.threshold) == ("soft", 0.8)


def test_similarity_scores_normalized_levenshtein() -> None:
    assert score(similarity("kitten"), "kitten").score == 1.0
    assert score(similarity("kitten"), "sitting").score == pytest.approx(1 - 3 / 7)


def test_similarity_rejects_a_non_string_expectation() -> None:
    with pytest.raises(UsageError, match="similarity\\(\\) compares text"):
        similarity(42)  # type: ignore[arg-type]


def test_similarity_on_a_non_string_value_scores_zero() -> None:
    result = score(similarity("x"), None)
    assert result.score == 0.0 and "expected a string" in result.reason


def test_satisfies_uses_the_label_as_name() -> None:
    matcher = satisfies(lambda n: n > 0, "total is positive")
    assert matcher.name == "total is positive"
    assert score(matcher, 3).state == "passed"
    assert score(matcher, -1).state == "failed"


def test_satisfies_requires_a_label() -> None:
    with pytest.raises(UsageError, match="needs a label"):
        satisfies(lambda n: True, "")


def test_boolean_matchers_are_gates_with_threshold_one() -> None:
    for matcher in (includes("a"), excludes("a"), equals(1), matches(int), satisfies(bool, "truthy")):
        assert (matcher.severity, matcher.threshold) == ("gate", 1.0)


def test_at_least_makes_a_soft_matcher_with_that_threshold() -> None:
    matcher = includes("a").at_least(0.5)
    assert (matcher.severity, matcher.threshold) == ("soft", 0.5)


def test_gate_keeps_the_threshold() -> None:
    matcher = similarity("a").at_least(0.6).gate()
    assert (matcher.severity, matcher.threshold) == ("gate", 0.6)


def test_chaining_never_changes_the_original() -> None:
    original = similarity("a")
    original.gate()
    original.at_least(0.1)
    original.label("renamed")
    assert (original.severity, original.threshold, original.name) == ("soft", 0.8, "similarity")


@pytest.mark.parametrize("bad", [1.5, -0.1, "0.7", True, float("nan")])
def test_at_least_rejects_thresholds_outside_zero_to_one(bad: object) -> None:
    with pytest.raises(UsageError, match="threshold between 0 and 1"):
        includes("a").at_least(bad)  # type: ignore[arg-type]


def test_label_renames_in_reports() -> None:
    assert score(includes("a").label("mentions a"), "a").name == "mentions a"


def test_optional_is_carried_into_the_result() -> None:
    assert score(includes("a").optional(), "a").optional is True


def test_make_assertion_accepts_bool_number_and_verdict_scores() -> None:
    assert score(make_assertion(name="b", score=lambda v: True), 0).score == 1.0
    assert score(make_assertion(name="n", score=lambda v: 0.25, severity="soft"), 0).score == 0.25
    result = score(make_assertion(name="v", score=lambda v: Verdict(0.0, "too short", actual="x")), 0)
    assert (result.reason, result.actual) == ("too short", "x")


def test_make_assertion_threshold_defaults_follow_severity() -> None:
    assert make_assertion(name="g", score=bool).threshold == 1.0
    assert make_assertion(name="s", score=bool, severity="soft").threshold == 0.8
    gate = make_assertion(name="t", score=bool, threshold=0.5)
    assert (gate.severity, gate.threshold) == ("gate", 0.5)


def test_make_assertion_rejects_an_unknown_severity() -> None:
    with pytest.raises(UsageError, match="severity must be 'gate' or 'soft'"):
        make_assertion(name="x", score=bool, severity="hard")  # type: ignore[arg-type]


def test_a_score_outside_zero_to_one_is_an_author_error() -> None:
    matcher = make_assertion(name="bad", score=lambda v: 1.5)
    with pytest.raises(UsageError, match="score must be a bool or a number in \\[0, 1\\]"):
        score(matcher, 0)


def test_a_soft_score_at_the_threshold_passes() -> None:
    assert score(make_assertion(name="s", score=lambda v: 0.7, severity="soft", threshold=0.7), 0).state == "passed"
