"""Sharding: `--shard I/N` runs a stable part of the planned `(eval, run index)` work, the same on every machine.

Each run is given to a shard by a hash of its *shard key*, so shards 1/N .. N/N together run every eval run exactly
once, whichever machine computes it and in whatever order evals were found. The key keeps together what one
process must run:

- the variants of one case at one run index (max-score and select-best compare them): the key is the group id
  (the eval id without its variant part) and the run index;
- the runs of a `sequential_runs=True` eval (one work item, run in order): the key is the id without a run index;
- the members of an eval group at one run index (one attempt shares a sandbox): the key is the group's.

The hash is BLAKE2b of the key's UTF-8 bytes, never Python's `hash()`, which is salted per process.
"""

from __future__ import annotations

import argparse
import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the command line parses --shard before anything else is imported
    from niceeval._run.discovery import EvalEntry
    from niceeval._run.plan import EvalStream

FORM = "I/N with 1 <= I <= N, e.g. --shard 2/4"


def shard_key(entry: EvalEntry, run_index: int) -> str:
    """What decides the shard of `entry`'s run `run_index`: runs with one key always share a shard."""
    base = entry.eval_group_key or entry.group or entry.id
    return base if entry.spec.sequential_runs else f"{base}#{run_index}"


def shard_of(key: str, count: int) -> int:
    """The shard (1 to `count`) that runs the work with this key."""
    digest = hashlib.blake2b(key.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") % count + 1


@dataclass(frozen=True, slots=True)
class Shard:
    """Shard `index` of `count` (both from 1): `--shard 2/4`."""

    index: int
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    def holds(self, entry: EvalEntry, run_index: int) -> bool:
        """Whether this shard runs `entry`'s run `run_index`."""
        return self.count == 1 or shard_of(shard_key(entry, run_index), self.count) == self.index

    def run_indexes(self, entry: EvalEntry, runs: int) -> list[int]:
        """The run indexes of `entry` (out of `runs`) this shard runs."""
        return [index for index in range(entry.spec.runs or runs) if self.holds(entry, index)]

    def select(self, entries: Iterable[EvalEntry], runs: int) -> EvalStream:
        """The evals with at least one run in this shard, in plan order (a stream, filtered as it is read)."""
        from niceeval._run.plan import EvalStream

        return EvalStream.of(entries).filtered(lambda e: any(self.holds(e, i) for i in range(e.spec.runs or runs)))

    def describe(self, entries: Iterable[EvalEntry], runs: int) -> str:
        """One line for the log: how much of the suite this shard runs (one pass over the evals)."""
        mine = evals = planned = total = 0
        for entry in entries:
            indexes = len(self.run_indexes(entry, runs))
            mine, evals = mine + indexes, evals + (indexes > 0)
            planned, total = planned + (entry.spec.runs or runs), total + 1
        return f"shard {self}: {mine} of the {planned} planned eval runs ({evals} of {total} evals)"


def parse_shard(text: str) -> Shard:
    """`--shard I/N` (argparse type): a usage error saying the form when it is not one."""
    index_text, slash, count_text = text.partition("/")
    try:
        index, count = int(index_text), int(count_text)
    except ValueError:
        index = count = 0
    if not slash or not 1 <= index <= count:
        raise argparse.ArgumentTypeError(f"--shard takes {FORM}; got {text!r}")
    return Shard(index, count)
