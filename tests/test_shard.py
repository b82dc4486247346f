"""`--shard I/N`: a stable hash gives every eval run to exactly one shard, keeping together what must run together."""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections import Counter

import pytest

from niceeval import EvalContext, define_eval
from niceeval._eval.spec import EvalSpec
from niceeval._run.discovery import EvalEntry
from niceeval._run.shard import Shard, parse_shard, shard_key, shard_of


@define_eval
async def plain(t: EvalContext) -> None:
    del t


@define_eval(sequential_runs=True)
async def in_order(t: EvalContext) -> None:
    del t


def entry(eval_id: str, spec: EvalSpec = plain, *, group: str | None = None, index: int = 0) -> EvalEntry:
    return EvalEntry(id=eval_id, spec=spec, group=group, group_size=3 if group else 1, group_index=index)


def suite() -> list[EvalEntry]:
    """40 plain evals, 10 cases x 3 variants, and 5 sequential evals with variants."""
    entries = [entry(f"evals/a.py::e{i}") for i in range(40)]
    for case in range(10):
        group = f"evals/qa.py::answer[c{case}]"
        entries += [entry(f"{group}[prompt={v}]", group=group, index=n) for n, v in enumerate("abc")]
    for case in range(5):
        group = f"evals/chat.py::chat[c{case}]"
        entries += [entry(f"{group}[model={v}]", in_order, group=group, index=n) for n, v in enumerate("xyz")]
    return entries


def test_the_assignment_is_pinned_so_a_change_of_algorithm_is_caught() -> None:
    assert [shard_of("evals/a.py::refund#0", n) for n in (2, 3, 4, 7)] == [2, 1, 4, 4]
    assert [shard_of("evals/a.py::refund#1", n) for n in (2, 3, 4, 7)] == [2, 2, 4, 6]
    assert [shard_of("evals/a.py::refund#2", n) for n in (2, 3, 4, 7)] == [1, 3, 1, 1]
    assert [shard_of("evals/qa.py::answer[c2]#0", n) for n in (2, 3, 4, 7)] == [2, 1, 2, 3]
    assert [shard_of("evals/slow.py::chat", n) for n in (2, 3, 4, 7)] == [2, 1, 2, 1]


def test_the_assignment_is_the_same_in_another_process() -> None:
    code = "from niceeval._run.shard import shard_of; print([shard_of(f'evals/a.py::e{i}#0', 4) for i in range(50)])"
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert other.stdout.strip() == str([shard_of(f"evals/a.py::e{i}#0", 4) for i in range(50)])


def test_the_key_of_a_variant_is_its_case_and_run_index_without_the_variant() -> None:
    group = "evals/qa.py::answer[c1]"
    assert shard_key(entry(f"{group}[prompt=a]", group=group), 2) == f"{group}#2"
    assert shard_key(entry("evals/a.py::e1"), 0) == "evals/a.py::e1#0"


def test_a_sequential_eval_keys_on_its_id_alone() -> None:
    assert shard_key(entry("evals/chat.py::chat", in_order), 3) == "evals/chat.py::chat"


@pytest.mark.parametrize("count", [1, 2, 4, 7])
def test_the_shards_together_run_every_eval_run_exactly_once(count: int) -> None:
    entries, runs = suite(), 3
    ran = Counter(
        (e.id, index) for n in range(1, count + 1) for e in entries for index in Shard(n, count).run_indexes(e, runs)
    )
    assert set(ran) == {(e.id, index) for e in entries for index in range(runs)}
    assert set(ran.values()) == {1}


def test_the_variants_of_a_case_at_one_run_index_share_a_shard() -> None:
    entries, runs = suite(), 3
    shard_of_run = {(e.id, i): n for n in range(1, 5) for e in entries for i in Shard(n, 4).run_indexes(e, runs)}
    for e in entries:
        for index in range(runs):
            if e.group is not None:
                together = {shard_of_run[(o.id, index)] for o in entries if o.group == e.group}
                assert len(together) == 1, (e.group, index, together)


def test_a_sequential_eval_runs_all_its_runs_in_one_shard() -> None:
    entries = [e for e in suite() if e.spec is in_order]
    for e in entries:
        holders = [n for n in range(1, 5) if Shard(n, 4).run_indexes(e, 3)]
        assert len(holders) == 1 and Shard(holders[0], 4).run_indexes(e, 3) == [0, 1, 2]


def test_the_shards_share_the_work_roughly_evenly() -> None:
    entries = [entry(f"evals/a.py::e{i}") for i in range(1000)]
    sizes = [len(Shard(n, 4).select(entries, 1)) for n in range(1, 5)]
    assert sum(sizes) == 1000 and min(sizes) > 200


def test_a_shard_says_how_much_of_the_suite_it_runs() -> None:
    entries = [entry(f"evals/a.py::e{i}") for i in range(40)]
    mine = len(Shard(2, 4).select(entries, 1))
    assert Shard(2, 4).describe(entries, 1) == f"shard 2/4: {mine} of the 40 planned eval runs ({mine} of 40 evals)"


def test_shard_parses_i_of_n() -> None:
    assert parse_shard("2/4") == Shard(2, 4)
    assert str(parse_shard("1/1")) == "1/1"


@pytest.mark.parametrize("text", ["0/4", "5/4", "x", "2", "1/0", "/4", "a/b", "-1/4"])
def test_a_bad_shard_says_the_form(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match=r"--shard takes I/N with 1 <= I <= N, e\.g\. --shard 2/4"):
        parse_shard(text)
