"""Declaring online evals, what `t` reads from a trace, sampling, and the watcher's guard beyond loopback."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from niceeval import UsageError, define_eval
from niceeval._core.spans import Span
from niceeval._run.execute import ExecOptions
from niceeval.online._score import chosen, sampled, score
from niceeval.tracing import Trace
from niceeval.tracing._session import watch_receiver
from tests.online.online_helpers import online_evals


def test_an_online_eval_takes_no_agent_or_dataset() -> None:
    with pytest.raises(
        UsageError,
        match=r"an online eval \(online=True\) scores finished production traces; it "
        r"takes no agent=, cases= \(drop them",
    ):
        define_eval(online=True, agent=lambda m: m, cases=[{"q": 1}])


def test_sample_and_where_need_online() -> None:
    with pytest.raises(
        UsageError, match=r"sample= and where= choose the traces an online eval scores; give online=True too"
    ):
        define_eval(sample=0.5)


@pytest.mark.parametrize("share", [0, 1.5, True, "half"])
def test_a_sample_outside_zero_to_one_is_refused(share: object) -> None:
    with pytest.raises(UsageError, match=r"define_eval\(sample=\.\.\.\) is the share of traces scored"):
        define_eval(online=True, sample=share)  # type: ignore[call-overload]


def test_niceeval_run_leaves_online_evals_out(tmp_path: Path) -> None:
    from niceeval._run.discovery import discover

    (tmp_path / "evals_mixed.py").write_text(
        "from niceeval import define_eval\n\n"
        "@define_eval(online=True)\ndef watched(t): pass\n\n"
        "@define_eval\ndef offline(t): pass\n",
        encoding="utf-8",
    )
    found = discover(tmp_path, [str(tmp_path)])
    assert [e.id for e in found.evals] == ["evals_mixed.py::offline"]
    assert [e.id for e in found.online] == ["evals_mixed.py::watched"]


def test_sampling_is_by_trace_id_the_same_in_every_process_and_near_the_share() -> None:
    ids = [f"{i:032x}" for i in range(20_000)]
    kept = [trace_id for trace_id in ids if sampled(trace_id, "evals/a.py::x", 0.1)]
    assert 0.09 < len(kept) / len(ids) < 0.11
    assert kept == [trace_id for trace_id in ids if sampled(trace_id, "evals/a.py::x", 0.1)]
    other = {trace_id for trace_id in ids if sampled(trace_id, "evals/b.py::y", 0.1)}
    assert len(other & set(kept)) < len(kept) / 4  # two evals sample apart


def genai_trace() -> Trace:
    messages_in = [
        {"role": "system", "parts": [{"type": "text", "content": "be brief"}]},
        {"role": "user", "parts": [{"type": "text", "content": "How do I reset my password?"}]},
    ]
    out = [{"role": "assistant", "parts": [{"type": "text", "content": "Use the reset link."}]}]
    agent = Span(
        trace_id="a" * 32, span_id="1" * 16, parent_id=None, name="invoke_agent support", start_ns=1, end_ns=9,
        attributes={"gen_ai.operation.name": "invoke_agent"}, service="support",
    )  # fmt: skip
    first = Span(
        trace_id="a" * 32, span_id="2" * 16, parent_id="1" * 16, name="chat", start_ns=2, end_ns=3,
        attributes={"gen_ai.operation.name": "chat", "gen_ai.input.messages": json.dumps(messages_in),
                    "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [
                        {"type": "tool_call", "name": "lookup"}]}])},
    )  # fmt: skip
    last = Span(
        trace_id="a" * 32, span_id="3" * 16, parent_id="1" * 16, name="chat", start_ns=5, end_ns=8,
        attributes={"gen_ai.operation.name": "chat", "gen_ai.input.messages": json.dumps(messages_in),
                    "gen_ai.output.messages": json.dumps(out)},
    )  # fmt: skip
    return Trace.of([last, agent, first])


def test_the_input_and_reply_are_read_from_genai_messages_the_last_model_call_answering() -> None:
    trace = genai_trace()
    assert (trace.input, trace.reply, trace.service) == (
        "How do I reset my password?",
        "Use the reset link.",
        "support",
    )
    assert trace.root.span_id == "1" * 16 and not trace.timed_out


READS = """
from niceeval import define_eval
from niceeval.expect import equals, includes

@define_eval(online=True)
def reads(t):
    t.check(t.input, includes("password"))
    t.check(t.reply, includes("reset link"))
    t.check(t.trace.service, equals("support"))
    t.check(len(t.spans), equals(3))

@define_eval(online=True)
async def sends(t):
    await t.send("another question")
"""


@pytest.mark.anyio
async def test_t_reads_the_trace_and_t_send_is_a_usage_error(tmp_path: Path) -> None:
    reads, sends = online_evals(tmp_path, READS)
    options = ExecOptions(timeout=10, root=tmp_path)
    read = await score(reads, genai_trace(), options, 0)
    assert read.outcome == "passed" and len(read.assertions) == 4
    sent = await score(sends, genai_trace(), options, 0)
    assert sent.error is not None and sent.error.kind == "usage"
    assert "an online eval scores one finished trace: it cannot send to the agent" in sent.error.message


def test_where_chooses_and_what_it_raises_propagates_to_the_watcher(tmp_path: Path) -> None:
    (entry,) = online_evals(
        tmp_path,
        "from niceeval import define_eval\n\n"
        "@define_eval(online=True, where=lambda trace: trace.service == 'support')\ndef chosen_one(t): pass\n",
    )
    assert chosen(entry, genai_trace())
    other = Trace.of([Span(trace_id="b" * 32, span_id="1" * 16, parent_id=None, name="x", service="billing")])
    assert not chosen(entry, other)


def test_t_trace_outside_an_online_eval_says_where_it_exists(tmp_path: Path) -> None:
    from niceeval._core.results import RunResult  # noqa: F401 - the runner's record

    (tmp_path / "evals_plain.py").write_text(
        "from niceeval import define_eval\n\n@define_eval(agent=lambda m: m)\ndef plain(t):\n    t.trace\n",
        encoding="utf-8",
    )
    from niceeval._run.discovery import discover
    from niceeval._run.execute import execute

    (entry,) = discover(tmp_path, [str(tmp_path)]).evals
    result = anyio.run(execute, entry, 0, ExecOptions(timeout=10, root=tmp_path))
    assert result.error is not None and "t.trace exists only in online evals" in result.error.message


def test_listening_beyond_loopback_needs_a_token() -> None:
    with pytest.raises(UsageError, match=r"listening on '0.0.0.0' reaches beyond this machine: give a token"):
        watch_receiver(_Sink(), host="0.0.0.0", port=0, token=None, status=dict)


def test_with_a_token_a_request_without_it_is_refused_401() -> None:
    import httpx

    receiver = watch_receiver(_Sink(), host="127.0.0.1", port=0, token="s3cret", status=lambda: {"ok": 1})
    receiver.start()
    try:
        bare = httpx.get(f"{receiver.url}/status", timeout=10)
        wrong = httpx.get(f"{receiver.url}/status", headers={"authorization": "Bearer nope"}, timeout=10)
        right = httpx.get(f"{receiver.url}/status", headers={"authorization": "Bearer s3cret"}, timeout=10)
    finally:
        anyio.run(receiver.close)
    assert (bare.status_code, wrong.status_code, right.status_code) == (401, 401, 200)
    assert right.json() == {"ok": 1} and receiver.refusals.count == 2


class _Sink:
    def add(self, spans: object) -> int:
        return 0
