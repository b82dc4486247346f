"""promptfoo and niceeval on the same configs, case by case, against one offline server.

Run by hand (pytest does not collect it):

    npm install promptfoo   # into a scratch dir; the harness takes its bin
    python bench/promptfoo_agreement.py --examples DIR --promptfoo SCRATCH/node_modules/.bin/promptfoo \\
        --config SCRATCH/from-docs/promptfooconfig.yaml

`DIR` holds promptfoo configs: every `promptfooconfig*.yaml` under it, each with the files it names beside it (for
instance promptfoo's own `examples/`, from a checkout: the harness reads them where they are and copies nothing);
each `--config` adds one more config from anywhere (one assembled from promptfoo's documentation, say).

One `niceeval.testing` server answers both tools: a chat request gets its last user message back (so both tools
see the same reply to the same prompt), a grading request a passing verdict, an embeddings request the server's
deterministic vectors. promptfoo runs with `--no-cache --no-write` and telemetry off; niceeval runs in process.

A row is one (test, prompt, provider) of a config. Each tool's verdict on a row is pass, fail, error (the run
crashed), refused (niceeval: the row or the whole config was refused as input) or inconclusive (niceeval: every
assertion of the row was undecided, e.g. only JavaScript, which niceeval never runs). Printed per config and in
total: the rows, the rows both gave a verdict on and how many agreed, and the agreement over all rows
(disagreements listed with both verdicts). niceeval's `scored` (only soft misses) counts as a pass, as
promptfoo passes a test whose weight-0 assertions fail.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from niceeval.testing import LLMRequest, LLMServer, Reply

GRADING_WORDS = ("rubric", "grade", "grader", "evaluate the output", "<output>")


def answer(request: LLMRequest) -> Reply:
    """The one script both tools are answered from."""
    schema = request.output_schema
    if schema is not None:  # niceeval's judges force a schema: the passing answer of each
        props = schema.get("properties", {})
        data: dict[str, Any] = {"reason": "offline verdict"}
        if "choice" in props:
            data["choice"] = props["choice"]["enum"][0]
        if "label" in props:
            data["label"] = props["label"]["enum"][0]
        if "pass" in props:
            data |= {"pass": True, "score": 1.0}
        if "result" in props:
            data["result"] = 1.0
        if "steps" in props:
            data |= {"steps": ["check"], "assessment": "fine", "score": 5}
        return Reply(data=data)
    prompt = "\n".join(str(m.content) for m in request.messages).lower()
    if any(word in prompt for word in GRADING_WORDS) and "json" in prompt:
        return Reply(text=json.dumps({"reason": "offline verdict", "pass": True, "score": 1.0}))
    return Reply(text=request.last_user_text)


@dataclass
class Rows:
    """One tool's verdict per row: (test, prompt, provider) -> pass | fail | error | refused."""

    verdicts: dict[tuple[int, int, int], str] = field(default_factory=dict)
    problem: str = ""


def run_promptfoo(binary: str, config: Path, env: dict[str, str]) -> Rows:
    rows = Rows()
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "out.json"
        command = [binary, "eval", "-c", config.name, "--no-cache", "--no-write", "--no-table", "--no-progress-bar"]
        done = subprocess.run(
            [*command, "-o", str(out)], cwd=config.parent, env=env, capture_output=True, text=True, timeout=600
        )
        if not out.is_file():
            rows.problem = (
                (done.stderr or done.stdout).strip().splitlines()[-1:][0] if done.stderr or done.stdout else ""
            )
            return rows
        results = json.loads(out.read_text())["results"]
    prompts = results["prompts"]
    labels = list(dict.fromkeys(str(p.get("label") or p.get("raw")) for p in prompts))
    providers = list(dict.fromkeys(str(p.get("provider")) for p in prompts))
    for result in results["results"]:
        shown = prompts[result["promptIdx"]]
        key = (
            int(result["testIdx"]),
            labels.index(str(shown.get("label") or shown.get("raw"))),
            providers.index(str(shown.get("provider"))),
        )
        error = result.get("failureReason") == 2 or (result.get("error") and not result.get("gradingResult"))
        rows.verdicts[key] = "error" if error else "pass" if result["success"] else "fail"
    return rows


async def _suite(entries: Any, problems: Any, options: Any, kept: list[Any]) -> None:
    from niceeval._run.suite import run_suite

    class Keep:
        def start(self, plan: Any, problems: Any) -> None:
            kept.append(("problems", list(problems)))

        def run_finished(self, result: Any) -> None:
            kept.append(("result", result))

        def finish(self, summary: Any) -> None:
            return None

    await run_suite(entries, problems, options, [Keep()])


def run_niceeval(config: Path, root: Path) -> Rows:
    from niceeval._eval.cases import Loading, iter_cases
    from niceeval._eval.config import load_config
    from niceeval._eval.dataset_eval import promptfoo_setup
    from niceeval._run.discovery import discover
    from niceeval._run.execute import ExecOptions
    from niceeval._run.plan import expand
    from niceeval._run.suite import SuiteOptions

    rows = Rows()
    loading = Loading()
    cases = [c.id for c in iter_cases(str(config), eval_file=config, root=root, loading=loading)]
    refused = [p for p in loading.problems if p.line is None and "row" not in str(p)]
    dimensions, _ = promptfoo_setup(config)
    prompts = list((dimensions or {}).get("prompt") or {"": ""})
    providers = list((dimensions or {}).get("provider") or {"": ""})
    settings = load_config(root)
    found = discover(root, [str(config)])
    plan = expand(found.evals, root=root, suite_variants=settings.variants)
    options = SuiteOptions(
        runs=1,
        concurrency=4,
        exec=ExecOptions(timeout=120, agent=settings.agent, root=root, judge=settings.judge, no_cache=True),
    )
    kept: list[Any] = []
    anyio.run(_suite, plan.evals, [*found.errors, *plan.errors], options, kept)
    results = [item for kind, item in kept if kind == "result"]
    for result in results:
        entry = next(e for e in plan.evals if e.id == result.eval_id)
        variant = entry.variant.names if entry.variant is not None else {}
        assert entry.case is not None
        key = (
            cases.index(entry.case.id),
            prompts.index(variant["prompt"]) if "prompt" in variant and len(prompts) > 1 else 0,
            providers.index(variant["provider"]) if "provider" in variant and len(providers) > 1 else 0,
        )
        errored = result.error is not None and not result.assertions
        undecided = bool(result.assertions) and all(a.state == "inconclusive" for a in result.assertions)
        passed = result.outcome in ("passed", "scored")
        rows.verdicts[key] = "error" if errored else "inconclusive" if undecided else "pass" if passed else "fail"
    rows.problem = "; ".join(str(p) for p in refused)[:200]
    return rows


def compare(config: Path, promptfoo: Rows, niceeval: Rows) -> tuple[int, int, int, list[str]]:
    """All rows, rows both gave a pass/fail verdict on, rows that agree, and the disagreements."""
    keys = sorted(set(promptfoo.verdicts) | set(niceeval.verdicts))
    both = agreed = 0
    differences = []
    for key in keys:
        theirs, ours = promptfoo.verdicts.get(key, "missing"), niceeval.verdicts.get(key, "refused")
        if theirs in ("pass", "fail") and ours in ("pass", "fail"):
            both += 1
        if theirs == ours:
            agreed += 1
        else:
            differences.append(f"  {config.parent.name} {key}: promptfoo {theirs}, niceeval {ours}")
    return len(keys), both, agreed, differences


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=Path, help="a folder of promptfoo configs")
    parser.add_argument("--config", type=Path, action="append", default=[], help="one more config (repeatable)")
    parser.add_argument("--promptfoo", required=True, help="the promptfoo executable (node_modules/.bin/promptfoo)")
    args = parser.parse_args(argv)
    found = sorted(args.examples.rglob("promptfooconfig*.yaml")) if args.examples is not None else []
    configs = [path.resolve() for path in [*found, *args.config]]
    if not configs:
        parser.error("name the configs: --examples DIR and/or --config PATH")
    totals = [0, 0, 0]
    with LLMServer(answer) as server, tempfile.TemporaryDirectory() as project:
        root = Path(project)  # niceeval's project: no config, so promptfoo's judge defaults apply
        os.chdir(root)
        env = {
            **os.environ,
            "OPENAI_API_KEY": "offline",
            "OPENAI_BASE_URL": server.base_url,
            "OPENAI_API_BASE_URL": server.base_url,
            "ANTHROPIC_API_KEY": "offline",
            "ANTHROPIC_BASE_URL": server.anthropic_base_url,
            "PROMPTFOO_DISABLE_TELEMETRY": "1",
            "PROMPTFOO_DISABLE_UPDATE": "1",
            "PROMPTFOO_DISABLE_SHARING": "1",
        }
        os.environ.update({k: v for k, v in env.items() if k.startswith(("OPENAI", "ANTHROPIC"))})
        for config in configs:
            theirs = run_promptfoo(args.promptfoo, config, env)
            ours = run_niceeval(config.resolve(), root)
            rows, both, agreed, differences = compare(config, theirs, ours)
            totals = [totals[0] + rows, totals[1] + both, totals[2] + agreed]
            shown = config.parent.name + "/" + config.name
            passed = sum(v == "pass" for v in theirs.verdicts.values())
            print(f"{shown}: {agreed}/{rows} rows agree ({both} with both verdicts; promptfoo passed {passed})")
            for problem in (theirs.problem, ours.problem):
                if problem:
                    print(f"  note: {problem}")
            print(
                "\n".join(differences), file=sys.stdout if differences else sys.stderr, end="\n" if differences else ""
            )
    rows, both, agreed = totals
    print(f"total: {agreed}/{rows} rows agree ({agreed / max(rows, 1):.0%}); {both} rows had both verdicts")
    return 0


if __name__ == "__main__":
    sys.exit(main())
