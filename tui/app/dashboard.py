"""The dashboard as its screens see it: one plain state object, written by the app alone.

Screens are handed a `Dashboard` when they are built and never reach the App: they read the
latest View and the clock it was derived at, subscribe to its change signals, and say what they
want done by posting a Message (`OpenDetails`) that the app handles. Respond, abort, attach and
the conversation are app actions (`app.respond`, ... in the screens' bindings). This keeps the
layering one way: the app imports the screens, no screen imports the app (an import-linter
contract in pyproject.toml holds it).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

from textual.dom import DOMNode
from textual.message import Message
from textual.signal import Signal

from tui.core.raw import RawFacts
from tui.core.view import Transition, View

if TYPE_CHECKING:
    from .inspect import Inspector

Key = tuple[str, str]


class Status(Protocol):
    """A replay's or a recording's one-line status (None: nothing to say)."""

    def status(self) -> str | None: ...


class OpenDetails(Message):
    """A screen asks for a session's detail view (the app pushes it)."""

    def __init__(self, key: Key) -> None:
        super().__init__()
        self.key = key


class Dashboard:
    """What every screen reads of the running dashboard. The app is its only writer: `pull()`
    sets `view` and `now` and publishes `view_changed`; the inspector publishes
    `activity_changed`; `mark_read` clears a row's unread mark and publishes `unread_changed`."""

    def __init__(
        self,
        owner: DOMNode,
        clock: Callable[[], float],
        server_urls: Sequence[str],
        *,
        inspector: Inspector,
        activity_changed: Signal[Key],
        unread: set[Key],
        read: Callable[[Key | None], bool],
        history: Callable[[Key], list[Transition]],
        raw: Callable[[Key], RawFacts | None] | None = None,
        read_only: bool = False,
        replay: Status | None = None,
        recording: Status | None = None,
    ) -> None:
        self.clock = clock
        self.view: View | None = None
        """The latest View (None until the first pull)."""
        self.now = clock()
        """The clock the View was derived at."""
        self.server_urls = list(server_urls)
        """The servers given on the command line (shown before they answer)."""
        self.looked: Callable[[], list[str]] | None = None
        """What local discovery looked at, a line per place (None: discovery is off)."""
        self.gone: Mapping[str, tuple[float, str]] | None = None
        """The servers taken out of the fleet (URL -> when, why: Fleet.gone), for the servers
        view (None: the source has none)."""
        self.unread = unread
        """Rows that changed while the user looked elsewhere (kept by the app's Attention)."""
        self._read = read
        self.history = history
        """A session's settled transitions since the dashboard started (its timeline)."""
        self.raw = raw
        """What the server said about a session, as received (None: the source cannot say)."""
        self.read_only = read_only
        """Every action is off (abort, reply, answer, attach): a wall screen."""
        self.replay = replay
        self.recording = recording
        self.show_pane = True
        """The details pane beside the table (wide terminals; d toggles it)."""
        self.inspector = inspector
        """Reads what the selected session is doing (its `look()`; `peek`: None without a
        live server)."""
        self.view_changed: Signal[View] = Signal(owner, "view-changed")
        self.activity_changed = activity_changed
        """A session's activity was read (the inspector publishes it)."""
        self.unread_changed: Signal[set[Key]] = Signal(owner, "unread-changed")

    def mark_read(self, key: Key | None) -> None:
        """The user looked at this row: clear its unread mark."""
        if self._read(key):
            self.unread_changed.publish(self.unread)
