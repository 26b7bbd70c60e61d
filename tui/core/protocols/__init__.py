"""The protocols OpenCode servers speak, each behind one seam.

V1 (1.x, last 1.18.33) and V2 (2.x) differ in their routes, their event stream and how their
facts become a session's inputs; everything after the inputs (journal, derive, the View, the
transitions and every consumer) is shared. A `Protocol` names what differs: how a snapshot is
read, the event stream's route and parser, and how often its heartbeat comes. A server is probed
by the first request of each full snapshot (V1's `/global/health`, V2's `/api/info`); adding a
protocol is adding an entry here and a folder beside `v2/`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from ..events import EventParser
from ..snapshot import Snapshot, fetch_snapshot
from .v2.events import V2EventParser
from .v2.snapshot import fetch_snapshot_v2


@dataclass(frozen=True, slots=True)
class Protocol:
    """What one protocol's adapter offers the monitor."""

    name: str  # "v1" | "v2" (status --json `servers[].protocol`, metrics)
    fetch: Callable[..., Awaitable[Snapshot]]  # (client, cache, **kw) -> Snapshot
    event_path: str  # the event stream of every folder
    parser: Callable[[], Any]  # a parser for one connection (EventParser's interface)
    heartbeat: float  # seconds between the stream's heartbeats
    comments: bool  # heartbeats are SSE comments (they count as signs of life)


V1 = Protocol("v1", fetch_snapshot, "/global/event", EventParser, 10.0, False)
V2 = Protocol("v2", fetch_snapshot_v2, "/api/event", V2EventParser, 15.0, True)
PROTOCOLS = {p.name: p for p in (V1, V2)}
