"""Throughput of the providers' adaptive limiter under 429s with `Retry-After` (issue 17).

Run by hand (pytest does not collect it):

    python bench/rate_limits.py [--requests 1000] [--concurrency 64] [--rate 0.2] [--retry-after 0.5]
                                [--latency 0.05]

`--requests` chat completions go through `niceeval.providers.call` (the path every agent and judge call takes)
with the real `openai` SDK, from `--concurrency` tasks at once, against the offline server (`niceeval.testing`)
answering after `--latency` seconds and failing a `--rate` share of the requests with a 429 carrying
`Retry-After: --retry-after`. Printed: wall time, the 429s the server sent, requests that failed for good, and how
the provider's limit moved (its lowest value, the share of the run it spent at 1, how many cuts and growths).
"""

from __future__ import annotations

import argparse
import os
import random
import time

import anyio

from niceeval import providers
from niceeval.testing import Fault, LLMRequest, LLMServer, Reply


def _args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--rate", type=float, default=0.2, help="share of requests answered with a 429")
    parser.add_argument("--retry-after", type=float, default=0.5, help="seconds in the 429's Retry-After")
    parser.add_argument("--latency", type=float, default=0.05, help="seconds the server takes per answer")
    parser.add_argument("--seed", type=int, default=17)
    return parser.parse_args()


class LimitTrace:
    """Samples the provider's limit every 10 ms while the requests run."""

    def __init__(self) -> None:
        self.samples: list[int] = []

    async def sample(self, limiter: providers.AdaptiveLimiter) -> None:
        while True:
            self.samples.append(limiter.limit)
            await anyio.sleep(0.01)


async def _main(args: argparse.Namespace, server: LLMServer) -> tuple[float, int, LimitTrace, int]:
    from openai import AsyncOpenAI

    client = AsyncOpenAI(api_key="bench", base_url=server.base_url, max_retries=0)
    limiter = providers.limiter_for("openai")
    trace, failed = LimitTrace(), 0
    todo = iter(range(args.requests))
    policy = providers.RetryPolicy(max_retries=8)

    async def one() -> None:
        nonlocal failed
        for _ in todo:
            try:
                await providers.call(
                    "openai/gpt-bench",
                    lambda: client.chat.completions.create(
                        model="gpt-bench", messages=[{"role": "user", "content": "hi"}]
                    ),
                    policy=policy,
                )
            except providers.ProviderError:
                failed += 1

    start = time.perf_counter()
    async with anyio.create_task_group() as sampler:
        sampler.start_soon(trace.sample, limiter)
        async with anyio.create_task_group() as workers:
            for _ in range(args.concurrency):
                workers.start_soon(one)
        sampler.cancel_scope.cancel()
    wall = time.perf_counter() - start
    await client.close()
    return wall, failed, trace, limiter.limit


def main() -> None:
    args = _args()
    rng = random.Random(args.seed)
    sent: list[int] = []

    def faults(request: LLMRequest) -> Fault | None:
        if rng.random() < args.rate:
            sent.append(1)
            return Fault.rate_limit(retry_after=args.retry_after)
        return None

    os.environ.setdefault("OPENAI_API_KEY", "bench")
    with LLMServer(lambda request: Reply(text="ok"), faults=faults, latency=args.latency) as server:
        wall, failed, trace, final = anyio.run(_main, args, server)
    floor = args.requests * args.latency / args.concurrency
    samples = trace.samples or [0]
    at_one = sum(s == 1 for s in samples) / len(samples)
    print(
        f"{args.requests} requests, concurrency {args.concurrency}, {args.rate:.0%} 429s (Retry-After "
        f"{args.retry_after:g} s), latency {args.latency:g} s"
    )
    print(f"wall {wall:.2f} s (no-fault floor {floor:.2f} s); 429s sent {len(sent)}; failed for good {failed}")
    print(
        f"limit: lowest {min(samples)}, mean {sum(samples) / len(samples):.1f}, at 1 for {at_one:.0%} of the run, "
        f"{final} at the end"
    )


if __name__ == "__main__":
    main()
