"""`niceeval import FILE`: a peer's suite file (or a niceeval dataset) written out as an eval module.

The module holds the cases as data, each with its `assert:` entries, and an eval that sends each case's input and
calls `t.check_case()`: the same suite `niceeval run FILE` runs, now as code to edit.
"""

from __future__ import annotations

import keyword
import pprint
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from niceeval._core.errors import relative
from niceeval._eval.cases import Loading, iter_cases
from niceeval._eval.dataset_eval import model_setup, promptfoo_providers, promptfoo_setup
from niceeval._eval.peers import model_ref
from niceeval._eval.reading import Reading


@dataclass(kw_only=True)
class Imported:
    """The module's code, and what did not carry over (notes) or could not be read (problems)."""

    code: str
    cases: int
    notes: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def _name(path: Path) -> str:
    stem = re.sub(r"\W+", "_", path.stem).strip("_").lower() or "suite"
    name = stem if stem[0].isalpha() else f"suite_{stem}"
    return f"{name}_" if keyword.iskeyword(name) else name


def _provider_code(ident: str) -> tuple[str, str]:
    """The import and the expression of the agent for a promptfoo provider id."""
    ref = model_ref(ident)
    if ref is None:  # echo: the agent answers with the prompt
        return "", "lambda message: message"
    factory = "anthropic_agent" if ref.startswith("anthropic/") else "openai_agent"
    return f"from niceeval.agents import {factory}", f"{factory}({ref!r})"


def _agent_code(providers: dict[str, str]) -> tuple[list[str], str | None, str | None]:
    """Imports, the `agent=` expression, and the variant dimension of a promptfoo config's providers."""
    if not providers:
        return [], None, None
    made = {label: _provider_code(ident) for label, ident in providers.items()}
    imports = sorted({line for line, _ in made.values() if line})
    if len(made) == 1:
        ((_, expression),) = made.values()
        return imports, expression, None
    names = {label: expression for label, (_, expression) in made.items()}
    table = "{" + ", ".join(f"{label!r}: {expression}" for label, expression in names.items()) + "}"
    return imports, "per_variant(lambda v: v['provider'])", table


def _send_code(prompts: dict[str, str], rows: list[dict[str, Any]]) -> list[str]:
    if len(prompts) > 1:
        return [
            "    # promptfoo's {{ var }} placeholders, filled from the test's vars",
            '    fill = re.compile(r"\\{\\{\\s*(\\w+)\\s*\\}\\}")',
            '    await t.send(fill.sub(lambda m: str(t.case["vars"][m[1]]), t.variant["prompt"]))',
        ]
    sent = "t.case.get('multiple_choice_prompt') or t.case['input']"
    if not any("multiple_choice_prompt" in row for row in rows):
        sent = "t.case['input']"
    if any(isinstance(row.get("input"), list) for row in rows):
        return [
            f"    sent = {sent}",
            "    if isinstance(sent, str):",
            "        await t.send(sent)",
            "    else:  # chat messages: the user's, in turn",
            "        for message in sent:",
            "            if message['role'] == 'user':",
            "                await t.send(message['content'])",
        ]
    if sent != "t.case['input']":
        return [f"    await t.send({sent})"]
    if any(not isinstance(row.get("input"), str) for row in rows):
        return [
            "    sent = t.case['input']",
            "    await t.send(sent if isinstance(sent, str) else json.dumps(sent))",
        ]
    return ["    await t.send(t.case['input'])"]


def _model_code(path: Path, data_file: Path | None) -> tuple[list[str], str | None]:
    """An OpenAI Evals definition's completions model as `openai_agent(...)` code (nothing for other files)."""
    model = model_setup(path, data_file)
    if model is None:
        return [], None
    tuned = model.temperature is not None
    options = f", options=ModelAgentOptions(temperature={model.temperature!r})" if tuned else ""
    system = f", system={model.system!r}" if model.system else ""
    names = "ModelAgentOptions, openai_agent" if tuned else "openai_agent"
    return [f"from niceeval.agents import {names}"], f"openai_agent({model.model!r}{system}{options})"


def import_suite(path: Path, root: Path, reading: Reading | None = None) -> Imported:
    """The eval module for the suite at `path`, read as `reading` (`--data`, `--fields`) says."""
    loading = Loading()
    rows: list[dict[str, Any]] = []
    found = iter_cases(str(path.resolve()), eval_file=path.resolve(), root=root, loading=loading, reading=reading)
    data_file = reading.data if reading is not None else None
    for case in found:
        row = dict(case.data)
        row.setdefault("id", case.id)
        rows.append(row)
    dimensions, _ = promptfoo_setup(path, data_file)
    prompts = dict((dimensions or {}).get("prompt") or {})
    imports, agent, provider_dimension = _agent_code(promptfoo_providers(path))
    model_imports, model_agent = _model_code(path, data_file)
    if model_agent is not None:
        imports, agent = model_imports, model_agent
    send = _send_code(prompts, rows)
    if provider_dimension is not None:
        imports.append("from niceeval.agents import per_variant")
    modules = [m for m in ("json", "re") if any(f"{m}." in line for line in send)]
    variants = {"prompt": prompts} if len(prompts) > 1 else {}
    options = ["cases=CASES"]
    if agent is not None:
        options.append(f"agent={agent}")
    constants = []
    if variants or provider_dimension:
        parts = [f'    "prompt": {pprint.pformat(prompts, width=100)},'] if variants else []
        parts += [f'    "provider": {provider_dimension},'] if provider_dimension else []
        constants = ["", "VARIANTS = {", *parts, "}"]
        options.append("variants=VARIANTS")
    shown = relative(str(path))
    code = "\n".join(
        [
            f'"""Imported from {shown} by `niceeval import`: its cases as data, checked by their `assert:` entries.',
            "",
            "Edit freely: t.check_case() applies each entry (docs/judge.md lists the types); replace entries",
            'with checks in code where you need more."""',
            "",
            *(f"import {m}" for m in modules),
            *([""] if modules else []),
            "from niceeval import define_eval",
            *imports,
            "",
            f"CASES = {pprint.pformat(rows, width=110, sort_dicts=False)}",
            *constants,
            "",
            "",
            f"@define_eval({', '.join(options)})",
            f"async def {_name(path)}(t):",
            *send,
            "    t.check_case()",
            "",
        ]
    )
    problems = [str(p) for p in loading.problems]
    return Imported(code=code, cases=len(rows), notes=loading.notes, problems=problems)
