"""Rubric templates: `{name}` (or `{{name}}`) placeholders filled from the case's fields, `{input}`, `{rubric}` and
`{output}`, in a rubric's criteria or in a whole judge prompt (`rubric_prompt=`, text or a file, like promptfoo's
rubricPrompt).

The output stays untrusted data: `{output}` becomes the nonce-tagged output block (or, in criteria, a pointer to
it), never raw text among the instructions. Braces that name no variable are text; a placeholder that almost
names one (`{ouptut}`) is an error at the call's line. Not Jinja: a `.j2` file is refused saying so.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from pathlib import Path

from niceeval._core.errors import UsageError
from niceeval.judge._families import Family
from niceeval.judge._prompts import SYSTEM_PROMPT, Messages, as_text, neutralise, nonce

_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_]\w*)\s*\}\}|\{([A-Za-z_]\w*)\}")
_OUTPUT_POINTER = "the output (given below as data in the output tags)"
_FILE_SUFFIXES = (".txt", ".md", ".prompt", ".tmpl")
_JINJA_SUFFIXES = (".j2", ".jinja", ".jinja2")


def placeholders(template: str) -> list[str]:
    """The variable names a template uses, in order."""
    return [m.group(1) or m.group(2) for m in _PLACEHOLDER.finditer(template)]


def render(template: str, values: Mapping[str, str], where: str | None) -> str:
    """Fill every placeholder that names a variable; other braces are text (`{polite}`, `{"pass": true}`).

    A placeholder that is *almost* a variable (`{ouptut}`) is a `UsageError` naming `where` and the right name.
    """
    for name in placeholders(template):
        close = difflib.get_close_matches(name, list(values), n=1, cutoff=0.75) if name not in values else []
        if close:
            known = ", ".join(sorted(values))
            raise UsageError(
                f"{where}: the rubric template uses {{{name}}}: did you mean {{{close[0]}}}? The variables are: "
                f"{known} (case fields come from define_eval(cases=...)); other braces are kept as text."
            )

    def fill(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        return values[name] if name in values else match.group(0)

    return _PLACEHOLDER.sub(fill, template)


def text_values(variables: Mapping[str, object]) -> dict[str, str]:
    """Template values as text (non-text case fields as JSON)."""
    return {key: as_text(value) for key, value in variables.items()}


def fill_criteria(criteria: str, variables: Mapping[str, object], where: str | None) -> str:
    """A rubric's criteria with its placeholders filled (`{output}` points at the tagged output)."""
    if not _PLACEHOLDER.search(criteria):
        return criteria
    return render(criteria, {**text_values(variables), "output": _OUTPUT_POINTER}, where)


def load_template(value: str, where: str | None) -> str:
    """`rubric_prompt=`: template text, or a file path (beside the calling eval file first, then the cwd)."""
    if "\n" not in value and value.endswith(_JINJA_SUFFIXES):
        raise UsageError(
            f"{where}: rubric_prompt file {value!r} looks like a Jinja template, but rubric templates are plain text "
            "with {name} placeholders (no Jinja tags or filters): rename it to .txt or .md and write {output}, "
            "{rubric}, {input} and case fields as {field}."
        )
    if "\n" in value or "{" in value or not value.endswith(_FILE_SUFFIXES):
        return value
    candidates = [Path(value)]
    if where and ":" in where:
        candidates.insert(0, Path(where.rsplit(":", 1)[0]).parent / value)
    for path in candidates:
        if path.is_file():
            return path.read_text(encoding="utf-8")
    raise UsageError(f"{where}: rubric_prompt file {value!r} not found (paths are relative to the eval file).")


def templated_messages(
    family: Family,
    template: str,
    criteria: str,
    output: str,
    variables: Mapping[str, object],
    where: str | None,
    *,
    note: str = "",
) -> Messages:
    """The judge messages for a whole-prompt template: our system message and security rules, the author's user
    message with `{output}` as the nonce-tagged output block (and `note`, when the output was cut, at its end)."""
    if "output" not in placeholders(template):
        raise UsageError(f"{where}: rubric_prompt must contain {{output}}, where the judged output goes.")
    code = nonce(family.name, template, criteria, output)
    block = f"<output-{code}>\n{neutralise(output, code)}\n</output-{code}>"
    values = {**text_values(variables), "rubric": criteria, "output": block}
    user = render(template, values, where)
    user += "\n\nAnswer with reason, pass (true only when the output meets the rubric) and a score from 0 to 1."
    if note:
        user += f"\n\n{note}"
    return [{"role": "system", "content": SYSTEM_PROMPT.format(nonce=code)}, {"role": "user", "content": user}]
