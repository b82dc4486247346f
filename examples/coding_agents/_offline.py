"""Offline stand-in for the models behind Claude Code and Codex: niceeval.testing's local server, scripted.

The real CLIs run; only the model's answers are scripted. First answer: a shell command that rewrites
greeter.py (Claude Code's `Bash` tool, Codex's `exec_command`), in the house style when the `greeting-style`
skill is in the prompt the CLI sent, and without it otherwise. Second answer: a short summary.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from niceeval.testing import LLMRequest, LLMServer, ReplyLike, ToolCall

_REPO_TOOLS = Path(__file__).resolve().parents[2] / ".tools" / "npm" / "node_modules" / ".bin"
_server: LLMServer | None = None


def scripted_model(request: LLMRequest) -> ReplyLike:
    """Rewrite greeter.py with a shell command, then say what was done."""
    if any(m.role == "tool" for m in request.messages):
        return "Updated greet() in greeter.py."
    styled = "greeting-style" in json.dumps(request.body)  # the skill is listed in the CLI's prompt
    body = "f'Hello, {name}!'" if styled else "f'Hello {name}'"
    command = f'printf "def greet(name: str) -> str:\\n    return {body}\\n" > greeter.py'
    if request.provider == "anthropic":
        return ToolCall(name="Bash", arguments={"command": command, "description": "Rewrite greeter.py"})
    return ToolCall(name="exec_command", arguments={"cmd": command})


def server() -> LLMServer:
    """The local server, started once per process (both CLIs talk to it)."""
    global _server
    if _server is None:
        _server = LLMServer(scripted_model).start()
    return _server


def cli(name: str) -> str:
    """The pinned CLI installed by this repository's scripts/coding-clis.sh, else the one on PATH."""
    local = _REPO_TOOLS / name
    return str(local) if local.exists() else shutil.which(name) or name


def node_modules() -> Path:
    """The npm folder holding the CLIs, which a container mounts read-only (the image has neither node nor them)."""
    return next(parent for parent in Path(cli("claude")).resolve().parents if parent.name == "node_modules")


def native_codex() -> str:
    """Codex's own binary, which its npm package ships beside the `codex` Node.js launcher: a static build that
    runs in an image without Node.js."""
    return str(
        node_modules() / "@openai" / "codex-linux-x64" / "vendor" / "x86_64-unknown-linux-musl" / "bin" / "codex"
    )
