"""A dataset run with no code: `niceeval run data/cases.yaml` sends each case's `input` to the config's agent and
applies its `assert:` entries (`t.check_case()`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from niceeval._core.errors import UsageError
from niceeval._eval.cases import FORMATS
from niceeval._eval.context import EvalContext, inputs_of
from niceeval._eval.promptfoo import render
from niceeval._eval.reading import Reading
from niceeval._eval.spec import EvalSpec
from niceeval._eval.variants import parse_variants

NAME = "dataset"
"""The eval's name in ids: `data/cases.yaml::dataset[case_id]`."""


def is_dataset(path: Path) -> bool:
    """Whether `path` names a dataset file rather than an eval module."""
    return path.is_file() and path.suffix.lower() in FORMATS


def case_input(case: Any, source: str | None) -> str | list[str]:
    """What a case sends to the agent: its `input` field (text; other values are sent as JSON), or for chat
    messages (Inspect's input) each user message in turn."""
    value = case.get("input") if isinstance(case, dict) else getattr(case, "input", None)
    if isinstance(case, dict) and case.get("multiple_choice_prompt"):
        value = case["multiple_choice_prompt"]
    if value is None or value == "":
        raise UsageError(
            f"{source}: a case run without an eval module needs an `input:` field (what is sent to the agent); "
            "add one, or write an eval module that sends what it needs and calls t.check_case()."
        )
    if isinstance(value, str):
        return value
    if isinstance(value, list) and value and all(isinstance(m, dict) and "role" in m for m in value):
        said = [_content(m.get("content")) for m in value if m.get("role") == "user"]
        if said:
            return said
    return json.dumps(value, ensure_ascii=False, default=str)


def _content(content: Any) -> str:
    if isinstance(content, list):  # content parts: the text ones
        return "\n".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return str(content)


async def _run_case(t: EvalContext) -> None:
    inputs = inputs_of(t)
    case, variant = t.case, inputs.variant
    if variant is not None and "prompt" in variant and isinstance(case, dict) and "vars" in case:
        messages: str | list[str] = render(variant["prompt"], case["vars"])
    else:
        messages = case_input(case, inputs.case.source if inputs.case is not None else None)
    for message in [messages] if isinstance(messages, str) else messages:
        await t.send(message)
    t.check_case()


def provider_agent(ident: str) -> Any:
    """The agent for a promptfoo provider id: `echo` answers with the prompt; `openai:...`, `anthropic:...` call
    the model (the SDK reads the key and base URL from the environment)."""
    from niceeval._eval.peers import model_ref

    if ident == "echo":
        from niceeval.agents import FunctionAgent

        return FunctionAgent(lambda message: message)
    ref = model_ref(ident)
    if ref is None:
        raise UsageError(f"provider {ident!r} is not one niceeval can call (openai:MODEL, anthropic:MODEL, echo)")
    if ref.startswith("anthropic/"):
        from niceeval.agents import anthropic_agent

        return anthropic_agent(ref)
    from niceeval.agents import openai_agent

    return openai_agent(ref)


def _peer_file(path: Path, data_file: Path | None = None) -> Any:
    """The promptfoo config or OpenAI Evals definition at `path` as loaded rows, prompts, providers or model; None
    for any other file."""
    if path.suffix.lower() not in (".yaml", ".yml", ".json"):
        return None
    try:
        from niceeval._eval.promptfoo_files import load_yaml

        data = load_yaml(path.read_text(encoding="utf-8"))  # JSON is YAML
    except Exception:
        return None  # the dataset loader reports it, with its line
    from niceeval._eval.openai_evals import is_openai_eval, load_openai_eval

    if is_openai_eval(data):
        return load_openai_eval(data, path, data_file)[0]
    from niceeval._eval.cases import peer_key

    if not (isinstance(data, dict) and peer_key(data) == "tests" and "prompts" in data):
        return None
    from niceeval._eval.promptfoo import load_promptfoo

    peer, _ = load_promptfoo(data, [], path.parent)
    return peer


def promptfoo_providers(path: Path) -> dict[str, str]:
    """A promptfoo config's callable providers, by label (empty for any other file)."""
    peer = _peer_file(path)
    return dict(peer.providers) if peer is not None else {}


def model_setup(path: Path, data_file: Path | None = None) -> Any:
    """The OpenAI Evals definition at `path` when a completions model answers it (its `model`, `system`,
    `temperature`); None for any other file."""
    peer = _peer_file(path, data_file)
    return peer if peer is not None and peer.model is not None else None


def model_agent(peer: Any) -> Any:
    """The agent of an OpenAI Evals definition's completions model: its system prompt and temperature."""
    from niceeval.agents import ModelAgentOptions, openai_agent

    options = ModelAgentOptions(temperature=peer.temperature)
    return openai_agent(peer.model, system=peer.system, options=options)


def promptfoo_setup(path: Path, data_file: Path | None = None) -> tuple[dict[str, Any] | None, Any]:
    """A promptfoo config's variant dimensions (several prompts, several providers) and its agent; an OpenAI Evals
    definition's model (its items from `data_file` when given)."""
    peer = _peer_file(path, data_file)
    if peer is None:
        return None, None
    if peer.model is not None:
        return None, model_agent(peer)
    from niceeval.agents import per_variant

    dimensions: dict[str, Any] = {}
    if len(peer.prompts) > 1:
        dimensions["prompt"] = peer.prompts
    if len(peer.providers) > 1:
        dimensions["provider"] = peer.providers
        return dimensions, per_variant(lambda v: provider_agent(v["provider"]))
    if peer.providers:
        (ident,) = peer.providers.values()
        return dimensions or None, per_variant(lambda v: provider_agent(ident))
    return dimensions or None, None


def dataset_eval(path: Path, reading: Reading | None = None) -> EvalSpec:
    """The eval that runs the dataset at `path` with the config's agent (or a promptfoo config's providers), read
    as `reading` (`--data`, `--fields`) says."""
    dimensions, agent = promptfoo_setup(path, reading.data if reading is not None else None)
    return EvalSpec(
        fn=_run_case,
        name=NAME,
        file=path.resolve(),
        line=1,
        description=f"the cases of {path.name}, sent to the agent and checked by their `assert:` entries",
        agent=agent,
        is_async=True,
        cases=str(path.resolve()),
        variants=parse_variants(dimensions, f"{path.name}: prompts and providers"),
        reading=reading,
    )
