"""The same task in a container: an image built from env/Dockerfile, the pinned CLIs mounted read-only into it.

Needs a Docker daemon: `niceeval run evals/greeter_docker.py`. Each run gets its own container from the image
(built once, then reused); the CLI runs there, reaches the offline model only through the endpoint niceeval
forwards into the container, and its commands cannot write outside the workspace.
"""

from pathlib import Path

from _offline import cli, native_codex, node_modules, server

from niceeval import EvalContext, define_eval
from niceeval.agents import CodingAgentOptions, claude_code_agent, codex_agent, per_variant
from niceeval.expect import equals
from niceeval.sandbox import docker_sandbox

SKILLS = Path(__file__).resolve().parent.parent / "skills"


def coding_agent(variant):
    options = CodingAgentOptions(skills=SKILLS, api_key="offline", max_turns=10, timeout=120)
    if variant["agent"] == "claude":
        return claude_code_agent(options, executable=cli("claude"), model="claude-sonnet-4-5", base_url=server().url)
    return codex_agent(options, executable=native_codex(), model="gpt-5", base_url=server().base_url)


@define_eval(
    fixture="fixtures/greeter",
    agent=per_variant(coding_agent),
    variants={"agent": ["claude", "codex"]},
    sandbox=docker_sandbox(dockerfile="env/Dockerfile", read_only=[node_modules()]),
    tags=["coding", "docker"],
)
async def fixes_the_greeting_in_a_container(t: EvalContext) -> None:
    await t.send("greet() in greeter.py should greet the person by name. Fix it.")
    t.file_changed("greeter.py")
    t.no_failed_shell_commands()
    image = await t.sandbox.run_shell("cat /etc/niceeval-example")
    t.check(image.stdout, equals("built from env/Dockerfile\n"))
