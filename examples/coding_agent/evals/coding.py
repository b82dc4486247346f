"""A sandbox eval: the agent edits a copy of the fixture; the diff, commands and hidden EVAL.py score it."""

import re
import sys

from _coding_agent import coding_agent

from niceeval import EvalContext, define_eval
from niceeval.expect import command_succeeded, includes


@define_eval(fixture="fixtures/greeter", agent=coding_agent, tags=["sandbox"], timeout=120)
async def adds_farewell(t: EvalContext) -> None:
    await t.send("Add farewell(name) to greeter.py returning 'Goodbye, NAME!' and end greet with '!'")
    t.file_changed("greeter.py")
    t.not_in_diff(re.compile(r"sk-[A-Za-z0-9]{16,}"))  # no secrets written
    t.called_tool("write_file", input={"path": "greeter.py"}, count=1)
    t.no_failed_shell_commands()
    run = await t.sandbox.run_command(sys.executable, ["-c", "import greeter; print(greeter.greet('Bo'))"])
    t.check(run, command_succeeded())
    t.check(run.stdout, includes("Hello, Bo!"))
    diff = await t.sandbox.diff()
    t.check(diff.get("greeter.py"), includes("def farewell"))
    # EVAL.py beside the fixture runs afterwards: each of its tests becomes a gate assertion.
