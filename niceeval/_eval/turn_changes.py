"""What a turn or a session changed in a sandbox eval's workspace: `await turn.diff()`, `await session.diff()`.

The conversation snapshots the workspace before and after each exchange with the agent (only in sandbox evals);
the diff of a turn or a session is computed from those snapshots when asked for, so it stays what that turn did
even after later turns and the eval's own writes changed the workspace again.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import anyio

from niceeval._core.awaits import tracked
from niceeval._core.errors import UsageError

if TYPE_CHECKING:
    from niceeval.sandbox import Diff, Sandbox, Stretch

T = TypeVar("T")


async def measured(sandbox: Sandbox | None, work: Callable[[], Awaitable[T]]) -> tuple[T, Stretch | None]:
    """Run `work`; with a sandbox, also the workspace before and after it."""
    if sandbox is None:
        return await work(), None
    from niceeval.sandbox import Stretch

    before = await sandbox.snapshot()
    result = await work()
    return result, Stretch(before=before, after=await sandbox.snapshot())


def diff_of(stretches: Sequence[Stretch] | None, what: str) -> Coroutine[Any, Any, Diff]:
    """The awaitable diff of `stretches` (`what` names the call in errors and in the await check).

    Raises:
        UsageError: Not a sandbox eval (`stretches` is None).
    """
    if stretches is None:
        raise UsageError(
            f"{what} is the workspace change of a sandbox eval: give the eval a fixture "
            "(@define_eval(fixture='fixtures/app')) for the agent to work in."
        )
    return tracked(_computed(tuple(stretches)), what)


async def _computed(stretches: tuple[Stretch, ...]) -> Diff:
    from niceeval.sandbox import stretches_diff

    return await anyio.to_thread.run_sync(stretches_diff, stretches)
