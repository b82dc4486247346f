"""The judge cache: hits cost nothing, repeats stay honest, `--cache-only` never calls, the file is stable."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import anyio
from judge_helpers import ANTHROPIC, OPENAI, RUBRIC_PASS, Run, always

from niceeval.judge import judge_spend
from niceeval.judge._cache import CachedVerdict, JudgeCache, cache_key, default_cache_path
from niceeval.testing import LLMServer


def test_a_miss_calls_and_stores_then_a_hit_makes_no_request(run: Run, cache: JudgeCache) -> None:
    run.server.set_script(always(RUBRIC_PASS))
    run.cache = cache
    (first,) = run(lambda t: t.rubric("Is it polite?"))
    (second,) = run(lambda t: t.rubric("Is it polite?"))
    assert len(run.server.requests) == 1 and len(cache) == 1
    assert (first.state, first.score, first.reason) == (second.state, second.score, second.reason)
    miss, hit = first.judge_calls[0], second.judge_calls[0]
    assert (miss.cached, hit.cached) == (False, True)
    assert hit.cost == 0.0 and (hit.input_tokens, hit.output_tokens) == (miss.input_tokens, miss.output_tokens)
    assert hit.messages == miss.messages


def test_any_change_to_the_question_is_a_miss(run: Run, cache: JudgeCache) -> None:
    run.server.set_script(always(RUBRIC_PASS))
    run.cache = cache
    run(lambda t: t.rubric("Is it polite?"))
    run(lambda t: t.rubric("Is it kind?"))
    run(lambda t: t.rubric("Is it polite?", on="another reply"))
    run(lambda t: t.rubric("Is it polite?", model=ANTHROPIC))
    assert len(run.server.requests) == 4 and len(cache) == 4


def test_no_cache_always_calls(run: Run) -> None:
    run.server.set_script(always(RUBRIC_PASS))
    run(lambda t: t.rubric("Is it polite?"))
    run(lambda t: t.rubric("Is it polite?"))
    assert len(run.server.requests) == 2


def test_repeats_bypass_reads_but_still_write(run: Run, cache: JudgeCache) -> None:
    run.server.set_script(always({"reason": "first", "pass": True, "score": 0.9}))
    run.cache = cache
    run(lambda t: t.rubric("Is it polite?"))
    run.server.set_script(always({"reason": "fresh", "pass": False, "score": 0.2}))
    run.cache_mode = "write_only"
    (repeat,) = run(lambda t: t.rubric("Is it polite?"))
    assert (repeat.reason, repeat.judge_calls[0].cached) == ("fresh", False)
    assert len(run.server.requests) == 2
    run.cache_mode = "read_write"
    (later,) = run(lambda t: t.rubric("Is it polite?"))
    assert (later.reason, later.judge_calls[0].cached) == ("fresh", True)


def test_cache_only_miss_is_a_clear_provider_error_without_a_request(run: Run, cache: JudgeCache) -> None:
    run.server.set_script(always(RUBRIC_PASS))
    run.cache, run.cache_mode = cache, "read_only_strict"
    (result,) = run(lambda t: t.rubric("Is it polite?"))
    assert (result.state, result.cause) == ("inconclusive", "provider_error")
    assert "not in cache (--cache-only)" in result.reason
    assert run.server.requests == [] and len(cache) == 0


def test_cache_only_hit_needs_no_api_key(llm_server: LLMServer, cache: JudgeCache) -> None:
    llm_server.set_script(always(RUBRIC_PASS))
    Run(server=llm_server, cache=cache)(lambda t: t.rubric("Is it polite?"))
    replay = Run(server=llm_server, cache=cache, cache_mode="read_only_strict", keys={})
    (result,) = replay(lambda t: t.rubric("Is it polite?"))
    assert result.state == "passed" and result.judge_calls[0].cached
    assert len(llm_server.requests) == 1


def test_the_fallback_is_looked_up_in_the_cache_too(run: Run, cache: JudgeCache) -> None:
    run.server.set_script(always(RUBRIC_PASS))
    run.cache = cache
    run(lambda t: t.rubric("Is it polite?", model=ANTHROPIC))
    run.cache_mode = "read_only_strict"
    run.settings = {"model": OPENAI, "fallback": ANTHROPIC}
    (result,) = run(lambda t: t.rubric("Is it polite?"))
    assert result.state == "passed"
    assert [(c.model, c.cached, c.cause) for c in result.judge_calls] == [
        (OPENAI, False, "provider_error"),
        (ANTHROPIC, True, None),
    ]


def test_failures_are_never_cached(run: Run, cache: JudgeCache) -> None:
    run.server.set_script(lambda request: "garbage")
    run.cache = cache
    run(lambda t: t.rubric("Is it polite?"))
    assert len(cache) == 0


def test_an_unusable_cache_file_never_costs_the_verdict(run: Run, tmp_path: Path) -> None:
    run.server.set_script(always(RUBRIC_PASS))
    (tmp_path / "taken").mkdir()
    with JudgeCache(tmp_path / "taken") as broken:  # a folder where the file should be
        run.cache = broken
        (result,) = run(lambda t: t.rubric("Is it polite?"))
    assert (result.state, result.score, result.reason) == ("passed", 0.9, "polite and on topic")
    assert "not stored in the judge cache" in result.judge_calls[0].reason


def test_clear_removes_every_verdict(tmp_path: Path) -> None:
    with JudgeCache(default_cache_path(tmp_path)) as cache:
        for i in range(3):
            cache.put_sync(f"k{i}", CachedVerdict(model=OPENAI, answer={"i": i}))
        assert cache.clear() == 3 and len(cache) == 0 and cache.get_sync("k0") is None
    assert (tmp_path / ".niceeval" / "judge-cache.sqlite").is_file()


def test_concurrent_writers_in_threads_and_tasks(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    with JudgeCache(path) as first, JudgeCache(path) as second:

        def write(cache: JudgeCache, start: int) -> None:
            for i in range(start, start + 50):
                cache.put_sync(f"k{i}", CachedVerdict(model=OPENAI, answer={"i": i}, input_tokens=i))

        threads = [threading.Thread(target=write, args=(c, s)) for c, s in ((first, 0), (second, 50), (first, 100))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

        async def read_all() -> list[CachedVerdict | None]:
            results: list[CachedVerdict | None] = [None] * 150

            async def read(i: int) -> None:
                results[i] = await second.get(f"k{i}")

            async with anyio.create_task_group() as tg:
                for i in range(150):
                    tg.start_soon(read, i)
            return results

        found = anyio.run(read_all)
    assert [v.input_tokens if v else None for v in found] == list(range(150))


WRITER = """
import sys
from niceeval.judge._cache import CachedVerdict, JudgeCache
with JudgeCache(sys.argv[1]) as cache:
    for i in range(int(sys.argv[2]), int(sys.argv[2]) + 100):
        cache.put_sync(f"k{i}", CachedVerdict(model="openai/m", answer={"i": i}))
        assert cache.get_sync(f"k{i}") is not None
"""


def test_concurrent_processes_share_the_file(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(start)]) for start in (0, 100, 200)]
    assert [writer.wait(timeout=60) for writer in writers] == [0, 0, 0]
    with JudgeCache(path) as cache:
        assert len(cache) == 300
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache.sqlite"]


def test_the_file_depends_only_on_its_contents(tmp_path: Path) -> None:
    entries = [(f"k{i}", CachedVerdict(model=OPENAI, answer={"reason": "r", "i": i})) for i in range(40)]
    for name, order in (("a", entries), ("b", list(reversed(entries)))):
        with JudgeCache(tmp_path / f"{name}.sqlite") as cache:
            for key, verdict in order:
                cache.put_sync(key, verdict)
    assert (tmp_path / "a.sqlite").read_bytes() == (tmp_path / "b.sqlite").read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.sqlite", "b.sqlite"]


def test_the_key_covers_model_prompt_schema_and_parameters() -> None:
    messages = [{"role": "user", "content": "x"}]
    base = cache_key(OPENAI, messages, {"type": "object"}, {})
    assert base == cache_key(OPENAI, [dict(m) for m in messages], {"type": "object"}, {})
    assert base != cache_key(ANTHROPIC, messages, {"type": "object"}, {})
    assert base != cache_key(OPENAI, [{"role": "user", "content": "y"}], {"type": "object"}, {})
    assert base != cache_key(OPENAI, messages, {"type": "array"}, {})
    assert base != cache_key(OPENAI, messages, {"type": "object"}, {"max_tokens": 1})


def test_cached_verdicts_count_apart_in_the_spend(run: Run, cache: JudgeCache) -> None:
    run.server.set_script(always(RUBRIC_PASS))
    run.cache = cache
    first = run(lambda t: t.rubric("Is it polite?"))
    second = run(lambda t: t.rubric("Is it polite?"))
    spend = judge_spend(first + second)
    assert (spend.calls, spend.cached) == (1, 1)
    assert spend.input_tokens == first[0].judge_calls[0].input_tokens
