"""The sandbox kinds an eval or the config may ask for, and the run's current sandbox (the sandboxes themselves
live in niceeval.sandbox, which the runner imports only for sandbox evals)."""

from contextvars import ContextVar
from typing import Any, ClassVar, Literal

SandboxKind = Literal["local", "bwrap", "docker"]
SANDBOX_KINDS: tuple[SandboxKind, ...] = ("local", "bwrap", "docker")
"""`local`: processes as they are (no isolation); `bwrap`: bubblewrap namespaces; `docker`: a container."""


class SandboxDeclaration:
    """A sandbox declared with its settings (`docker_sandbox(image=...)` from niceeval.sandbox), accepted wherever
    a kind is: `@define_eval(sandbox=...)`, the config's `sandbox`, or `per_variant(...)` returning one."""

    kind: ClassVar[SandboxKind]


SandboxChoice = SandboxKind | SandboxDeclaration
"""What `sandbox=` takes: a kind by name, or a declaration with settings."""

CURRENT_SANDBOX: ContextVar[Any] = ContextVar("niceeval_sandbox", default=None)
"""The sandbox of the eval being run (a `niceeval.sandbox.Sandbox`); read it with `niceeval.sandbox.current_sandbox`."""
