"""LinkState: how a monitor reaches one server, as a record with pure transitions.

The event stream (up or down, since when, why it was last lost), the snapshots (the last one's
error and since when), the gap (the stream was lost and no snapshot has covered it yet), and
since when the stream has carried every event (what lets a resync vouch for the journal). Each
change is a function from one state to the next, given what happened and when: no clock, no I/O,
no task; the reflector (tui.core.reflector) keeps the current one and reads what it says.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .decide import Link


@dataclass(frozen=True, slots=True)
class LinkState:
    """How the server is reached now (every field as of the last transition)."""

    error: str | None = None  # why the last snapshot failed (None: it succeeded)
    error_since: float | None = None  # when the current error began
    error_at: float | None = None  # when a try that failed began (a snapshot, a reconnect)
    fatal: bool = False  # retrying will not help without a fix (authentication failed)
    connected: bool = False  # the event stream is up
    connected_at: float = 0.0  # when it last came up (0: never)
    stream_error: str | None = None  # why the stream could not be opened last (None: it was)
    stream_connects: int = 0  # streams opened (each one after the first: a reconnect)
    stream_drop: tuple[float, str] | None = None  # the last connected stream's end: when, why
    gap_since: float | None = None  # the stream was lost then, and no snapshot covered it since
    down_since: float | None = None  # rows last derived while unreachable, since
    vouch_since: float | None = None  # since when the stream carried every event (None: down)
    gave_up: bool = False  # the last snapshot to end was given up by the monitor (GivenUp)

    # -- what it says ----------------------------------------------------------------------------
    def link(self) -> Link:
        """Whether the rows are live: until a snapshot or a reconnect fails (a stream lost alone
        does not make them wrong); then as an unreachable server's, until a snapshot succeeds.
        A stream back after the gap (a server restart, a network cut) does not vouch for what
        the last good snapshot showed: runs may have ended, or been cut off, unseen."""
        up = self.error is None or (self.connected and not self.fatal and self.gap_since is None)
        return Link(up, self.error, self.error_since)

    def stream_health(self, now: float, stall_after: float, last_event_at: float | None) -> str:
        """`connected`; `stalled` once no event came for `stall_after` s (the last came at
        `last_event_at`: a frame's arrival is no change of the link, kept beside it, as it is
        the hot path); `lost` while reconnecting; `none` before the first connection."""
        if self.connected:
            quiet = now - max(last_event_at or 0.0, self.connected_at)
            return "stalled" if quiet > stall_after else "connected"
        return "lost" if self.connected_at else "none"

    def vouches(self, snapshot_started: float | None) -> bool:
        """Whether the stream has carried every event since a snapshot that began then
        (connected, nothing missed or unreadable since)."""
        since = self.vouch_since
        return (
            self.connected
            and since is not None
            and snapshot_started is not None
            and since <= snapshot_started
        )

    # -- what happens ----------------------------------------------------------------------------
    def opened(self, now: float) -> LinkState:
        """The event stream came up: every event from now on arrives."""
        return replace(
            self,
            stream_connects=self.stream_connects + 1,
            connected=True,
            connected_at=now,
            vouch_since=now,
            stream_error=None,
        )

    def dropped(self, why: str, unreachable: bool, now: float) -> LinkState:
        """The stream went down, or could not be opened (`unreachable`: the server could not
        be reached). A reconnect that cannot reach a server whose stream was lost says the
        server went away (a restart may have cut runs off), as a failed snapshot would."""
        state = self
        was = self.connected
        gap = self.gap_since
        if was and gap is None:
            gap = now
        elif not was and gap is not None and unreachable:
            state = state.failed(why, False, now)
        return replace(
            state,
            vouch_since=None,
            gap_since=gap,
            connected=False,
            stream_error=why,
            stream_drop=(now, why) if was else self.stream_drop,
        )

    def unvouched(self, now: float) -> LinkState:
        """Events were missed or could not be read: the stream vouches from `now` on only."""
        return replace(self, vouch_since=now)

    def failed(self, why: str, fatal: bool, now: float, tried_at: float | None = None) -> LinkState:
        """A snapshot (or a reconnect to a lost server) failed; the try began at `tried_at`
        (None: `now`)."""
        since = now if self.error is None else self.error_since
        tried = now if tried_at is None else tried_at
        return replace(self, error=why, error_since=since, error_at=tried, fatal=fatal)

    def installed(self, started_at: float) -> LinkState:
        """A snapshot that began at `started_at` is in: no error; it covers the gap when it
        began after the stream came back."""
        gap = self.gap_since
        if self.connected and started_at >= self.connected_at:
            gap = None
        return replace(
            self, error=None, error_since=None, fatal=False, gave_up=False, gap_since=gap
        )

    def giving_up(self, gave_up: bool) -> LinkState:
        """Whether the last snapshot to end was given up by the monitor itself."""
        return replace(self, gave_up=gave_up)

    def seen(self, reachable: bool, since: float | None, now: float) -> LinkState:
        """Rows were derived: reachable, or down since when the link says (else `now`)."""
        if reachable:
            return self if self.down_since is None else replace(self, down_since=None)
        if self.down_since is not None:
            return self
        return replace(self, down_since=since or now)
