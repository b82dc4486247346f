"""`t.session`, `t.new_session()`, `t.session_id` and `t.reply`: the eval's conversations with the agent.

`Sessions` holds them and the current one, which `t.send` continues. `Latest` is what the current one last
exchanged, kept apart so that the judge and the comparisons read the reply without holding a conversation (whose
turns reach the judge): a finished run then has no reference cycle.
"""

from __future__ import annotations

from niceeval._core.awaits import AwaitTracker
from niceeval._core.errors import UsageError
from niceeval._eval.conversation import Conversation, ConversationSetup, Exchange, Session


class Latest:
    """The current conversation's last exchange: `reply()` as `t.reply` reads it, and what was `asked()`."""

    __slots__ = ("_exchange", "_awaits")

    def __init__(self, awaits: AwaitTracker) -> None:
        self._awaits = awaits
        self._exchange = Exchange()

    def begin(self) -> Exchange:
        """A fresh exchange for a new conversation, which is the current one from now on."""
        self._exchange = Exchange()
        return self._exchange

    def reply(self) -> str:
        """The current conversation's reply.

        Raises:
            UsageError: A `t.send(...)` before it was never awaited, so this would be the reply before it.
        """
        forgotten = self._awaits.unstarted()
        if forgotten is not None:
            raise UsageError(forgotten.message())  # now, not a check of the stale reply and the same error later
        return self._exchange.reply

    def asked(self) -> str | None:
        """What the eval last sent with `t.send` in the current conversation; None before the first."""
        return self._exchange.asked


class Sessions:
    """The eval's conversations, the first opened with the context; `current` is the one `t.send` continues."""

    __slots__ = ("_setup", "_latest", "_all", "current")

    def __init__(self, setup: ConversationSetup, latest: Latest) -> None:
        self._setup = setup
        self._latest = latest
        self.current = Conversation(setup, number=1, exchange=latest.begin())
        self._all = [self.current]

    @property
    def reply(self) -> str:
        """The agent's last reply text in the current conversation ("" before the first `send`)."""
        return self._latest.reply()

    @property
    def session_id(self) -> str:
        """The id of the current conversation with the agent."""
        return self.current.id

    @property
    def session(self) -> Session:
        """The current conversation, for assertions over only its turns."""
        return Session(self.current)

    def new_session(self) -> Session:
        """Start a separate conversation: later `send` calls and `reply` use it."""
        self.current = Conversation(self._setup, number=len(self._all) + 1, exchange=self._latest.begin())
        self._all.append(self.current)
        return Session(self.current)

    def opened(self) -> bool:
        """Whether some conversation has its agent session open."""
        return any(conversation.opened for conversation in self._all)

    async def close(self) -> None:
        """Close every conversation's agent session (the runner does, after the eval)."""
        for conversation in self._all:
            await conversation.close()
