"""What a recording taps: every snapshot response and every event frame, as received.

The Client and the ServerMonitor call a `Tap` (when one is set) with what the server said and
when; `tui.record` writes it to a file and replays it. Nothing of the request goes in beyond its
method, path and query: never a header, so never a password, a cookie or an auth token.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Protocol

#: The snapshot a request belongs to (its number within the monitor), while one is being taken;
#: requests outside a snapshot (actions, an alert's reply lookup) have None.
SNAPSHOT: ContextVar[int | None] = ContextVar("ocwatch_snapshot", default=None)

#: Response headers a replay needs (what the client reads): everything else is left out.
KEPT_HEADERS = ("content-type", "x-next-cursor", "location")


class Tap(Protocol):
    """Receives what one server said, with the receive time (epoch seconds)."""

    def http(
        self,
        server: str,
        t: float,
        snapshot: int | None,
        method: str,
        path: str,
        query: str,
        status: int,
        headers: dict[str, str],
        body: bytes,
        refused: str | None = None,
    ) -> None:
        """A complete answer (the body decoded, as the client read it), or one the client
        refused while reading it (`refused`: why, e.g. larger than its bound; no body)."""

    def frame(self, server: str, t: float, data: str) -> None:
        """One event of the stream: its `data`, as received."""

    def stream(
        self, server: str, t: float, up: bool, why: str | None, error: str | None = None
    ) -> None:
        """The event stream connected (`up`), or was lost (and why; `error`: the name of the
        OcwatchError class that said so)."""

    def snapshot(
        self,
        server: str,
        t: float,
        number: int,
        begin: bool,
        failed: str | None = None,
        error: str | None = None,
        protocol: str | None = None,
    ) -> None:
        """A snapshot began, or ended (`failed`: why it did not succeed; `error`: the name of
        the OcwatchError class that said so; `protocol`: the one an installed snapshot was read
        by, "v1" or "v2")."""
