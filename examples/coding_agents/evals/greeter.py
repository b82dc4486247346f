"""A coding task over a 2 x 2 matrix: Claude Code / Codex, with / without the house-style skill.

Each run copies fixtures/greeter into a fresh workspace, runs the real CLI there, and scores what it left:
the diff, the commands it ran, and the hidden EVAL.py. The report puts the four side by side.
"""

from pathlib import Path

from _offline import cli, server

from niceeval import EvalContext, define_eval
from niceeval.agents import CodingAgentOptions, claude_code_agent, codex_agent, per_variant

SKILLS = Path(__file__).resolve().parent.parent / "skills"


def coding_agent(variant):
    options = CodingAgentOptions(skills=variant["skills"], api_key="offline", max_turns=10, timeout=120)
    if variant["agent"] == "claude":
        return claude_code_agent(options, executable=cli("claude"), model="claude-sonnet-4-5", base_url=server().url)
    return codex_agent(options, executable=cli("codex"), model="gpt-5", base_url=server().base_url)


@define_eval(
    fixture="fixtures/greeter",
    agent=per_variant(coding_agent),
    variants={"agent": ["claude", "codex"], "skills": {"on": SKILLS, "off": None}},
    tags=["coding"],
)
async def fixes_the_greeting(t: EvalContext) -> None:
    await t.send("greet() in greeter.py should greet the person by name. Fix it.")
    t.file_changed("greeter.py")
    t.no_failed_shell_commands()
