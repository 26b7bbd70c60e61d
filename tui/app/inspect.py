"""Reading what the selected session is doing (`tui.core.activity`), lazily.

Only the session the user has in front of them is read: the cursor's row when the details pane
is open, the detail view's session. A look is asked for when the selection changes (after a
short pause, so running the cursor down a long table reads only where it stops), when the row's
`updated` time moves, and every few seconds while it runs. One look per server is in flight at a
time; the last few are kept, so coming back to a row shows it at once.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from tui.core.activity import Activity, fetch_activity, fetch_limits
from tui.core.client import OcwatchError
from tui.core.view import RUNNING, SessionRow

if TYPE_CHECKING:
    from tui.core.client import Client
    from tui.core.fleet import Fleet

    from .app import OcwatchApp

Key = tuple[str, str]
SETTLE = 0.15
"""Seconds the selection must stay put before it is read."""
RUNNING_EVERY = 2.0
"""Seconds between two looks at a session that runs (its tool's time counts on screen
in between) while its server's stream carries output; a live stream that carries nothing
(a long tool call, a server at rest) gives no reason to look again: every change of the
session moves its `updated` time, which asks for a look (a light touch: issue 42)."""
UPDATED_GAP = 0.5
"""Least seconds between two looks at one session whose `updated` time keeps moving (a
streaming reply moves it many times a second)."""
RETRY_AFTER = 5.0
"""Seconds before a failed look is tried again."""
KEPT = 32


@dataclass(frozen=True, slots=True)
class Look:
    """What can be said about a session's activity now: the last one read (if any), whether a
    read is on its way, why the last failed, and whether there is a server to read from."""

    activity: Activity | None
    loading: bool = False
    error: str | None = None
    available: bool = True


class Peek(Protocol):
    """How the dashboard reads one session's activity from its server."""

    async def activity(self, server: str, session_id: str, directory: str) -> Activity:
        """What the session is doing; OcwatchError when its server cannot say."""
        ...

    async def messages(
        self, server: str, session_id: str, directory: str, limit: int | None
    ) -> list[Any]:
        """The session's newest `limit` messages as the server sends them (None: all); on V2
        with the transcript's idle entries and retries (Client.conversation)."""
        ...

    def stream_output_at(self, server: str) -> float | None:
        """While the server's event stream is live: when it last carried output (streamed
        tokens included; -1: none yet), so that a look made after it is still current;
        None: the stream is not live, nothing vouches for the session between two looks."""
        ...


class FleetPeek:
    """Reads through each watched server's own client (and its credentials); the context
    windows of a server's models are read once."""

    def __init__(self, fleet: Fleet) -> None:
        self.fleet = fleet
        self._limits: dict[str, dict[tuple[str, str], int]] = {}

    async def activity(self, server: str, session_id: str, directory: str) -> Activity:
        async def look(client: Client) -> Activity:
            limits = self._limits.get(server)
            if limits is None:
                limits = self._limits[server] = await fetch_limits(client)
            return await fetch_activity(
                client, session_id, directory or None, limits=limits, clock=self.fleet.clock
            )

        return await self.fleet.act(server, look, resync=False)

    async def messages(
        self, server: str, session_id: str, directory: str, limit: int | None
    ) -> list[Any]:
        async def read(client: Client) -> list[Any]:
            return await client.conversation(session_id, limit, directory or None)

        return await self.fleet.act(server, read, resync=False)

    def stream_output_at(self, server: str) -> float | None:
        monitor = self.fleet.monitor(server)
        if monitor is None or not monitor.state.connected:
            return None
        return monitor.output_at if monitor.output_at is not None else -1.0


class Inspector:
    """Keeps the selected session's Activity fresh; `changed` is called when a look lands."""

    def __init__(
        self, app: OcwatchApp, peek: Peek | None, changed: Callable[[Key], None] = lambda _key: None
    ) -> None:
        self.app = app
        self.peek = peek
        self.changed = changed
        self._kept: OrderedDict[Key, tuple[Activity, float | None]] = OrderedDict()
        """key -> (the activity, the row's `updated` it was read for)."""
        self.settle = SETTLE
        self._wanted: Key | None = None
        self._busy: dict[str, Key] = {}
        """server -> the session a look is reading there (one look per server at a time: a
        stalled server never holds the pane of another's sessions)."""
        self._failed: dict[Key, tuple[str, float]] = {}
        """key -> (why the last look failed, when: the app's clock)."""

    @property
    def available(self) -> bool:
        return self.peek is not None

    def activity(self, key: Key) -> Activity | None:
        kept = self._kept.get(key)
        return kept[0] if kept is not None else None

    def error(self, key: Key) -> str | None:
        """Why the last look at this session failed (None: it did not)."""
        failed = self._failed.get(key)
        return failed[0] if failed is not None else None

    def loading(self, key: Key) -> bool:
        return self._busy.get(key[0]) == key or (self._wanted == key and key not in self._kept)

    def look(self, row: SessionRow, now: float, *, ask: bool = True) -> Look:
        """What to show for `row`; `ask`: a read is asked for when it is out of date (not for
        a session gone from the View)."""
        activity = self.want(row, now) if ask else self.activity(row.key)
        return Look(activity, self.loading(row.key), self.error(row.key), self.available)

    def want(self, row: SessionRow, now: float) -> Activity | None:
        """The activity to show for `row` (the last one read, maybe None) and, when it is out
        of date, a look asked for."""
        key = row.key
        kept = self._kept.get(key)
        if self.peek is None:
            return None
        failed = self._failed.get(key)
        if failed is not None and now - failed[1] < RETRY_AFTER:
            stale = False
        elif kept is None:
            stale = True
        else:
            age = now - kept[0].fetched_at
            output = self.peek.stream_output_at(row.server) if row.state in RUNNING else None
            stale = (kept[1] != row.updated and age >= UPDATED_GAP) or (
                row.state in RUNNING
                and age >= RUNNING_EVERY
                and (output is None or output > kept[0].fetched_at)
            )
        if stale and self._wanted != key:
            self._wanted = key  # the newest wish wins; started now, or when a look lands
            if key[0] not in self._busy:
                self._schedule(key, self.settle if kept is None else 0.0)
        return kept[0] if kept is not None else None

    def _schedule(self, key: Key, delay: float) -> None:
        if delay > 0:  # a new selection: read it once the cursor rests there
            self.app.set_timer(delay, lambda: self._start(key))
        else:  # (a timer of 0 s divides by zero in Textual)
            self.app.call_next(self._start, key)

    def _start(self, key: Key) -> None:
        if self._wanted != key or key[0] in self._busy:
            return  # the selection moved on (or a look at its server is on its way)
        view = self.app.view
        row = view.rows.get(key) if view is not None else None
        if row is None or self.peek is None:
            self._wanted = None
            return
        self._busy[key[0]] = key
        self.app.run_worker(
            self._look(row),
            group="inspect",
            exit_on_error=False,
            description=f"read what {row.id} is doing",
        )

    async def _look(self, row: SessionRow) -> None:
        key = row.key
        assert self.peek is not None
        try:
            activity = await self.peek.activity(row.server, row.id, row.directory)
        except OcwatchError as exc:
            self._failed[key] = (exc.message, self.app.clock())
        except Exception as exc:  # a bug must not take the dashboard down
            self._failed[key] = (f"{type(exc).__name__}: {exc}", self.app.clock())
        else:
            self._failed.pop(key, None)
            self._kept[key] = (activity, row.updated)
            self._kept.move_to_end(key)
            while len(self._kept) > KEPT:
                self._kept.popitem(last=False)
        finally:
            del self._busy[key[0]]
            wanted = self._wanted
            if wanted == key:
                self._wanted = None
            elif wanted is not None and wanted[0] == key[0]:
                self._schedule(wanted, self.settle)  # the selection moved while this ran
        self.changed(key)
