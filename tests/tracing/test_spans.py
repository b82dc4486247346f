"""The span model: parent and children linked from ids, durations that survive clock trouble, records."""

from __future__ import annotations

from niceeval._core.spans import SpanRecord, link
from tests.tracing.trace_helpers import span


def test_link_sets_parent_and_children_in_start_order() -> None:
    root = span("r", None, start=0, end=10)
    second = span("b", "r", start=5, end=6)
    first = span("a", "r", start=1, end=2)
    grandchild = span("c", "a", start=1, end=2)
    ordered = link([second, grandchild, root, first])
    assert ordered[0] is root
    assert root.children == [first, second] and first.children == [grandchild]
    assert grandchild.parent is first and list(grandchild.ancestors()) == [first, root]
    assert list(root.descendants()) == [first, grandchild, second]


def test_a_span_whose_parent_never_arrived_is_a_root() -> None:
    (orphan,) = link([span("a", "missing")])
    assert orphan.parent is None and orphan.parent_id == "missing"


def test_a_span_sent_twice_is_kept_once() -> None:
    assert len(link([span("a", None), span("a", None)])) == 1


def test_a_cycle_of_parent_ids_is_cut() -> None:
    a, b = span("a", "b", start=0), span("b", "a", start=1)
    link([a, b])
    assert a.parent is b and b.parent is None and list(a.ancestors()) == [b]


def test_clock_that_stepped_back_gives_zero_duration() -> None:
    assert span("a", None, start=2_000, end=1_000).duration == 0.0
    assert span("a", None, start=1_000_000_000, end=1_500_000_000).duration == 0.5


def test_record_round_trip_keeps_every_field() -> None:
    original = span("a", "p", "op", 1, 9, **{"k": [1, "x"], "nested": {"n": True}})
    original.status, original.status_message = "error", "bad"
    again = SpanRecord.model_validate_json(SpanRecord.of(original).model_dump_json()).span()
    assert SpanRecord.of(again) == SpanRecord.of(original)
    assert again.attributes == {"k": [1, "x"], "nested": {"n": True}} and again.status == "error"
