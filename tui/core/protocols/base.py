"""What one protocol's adapter offers the monitor (tui.core.protocols)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from ..snapshot import Snapshot


@dataclass(frozen=True, slots=True)
class Protocol:
    """One protocol's adapter: how a snapshot is read, the event stream's route and parser,
    and how often its heartbeat comes."""

    name: str  # "v1" | "v2" (status --json `servers[].protocol`, metrics)
    fetch: Callable[..., Awaitable[Snapshot]]  # (client, cache, **kw) -> Snapshot
    event_path: str  # the event stream of every folder
    parser: Callable[[], Any]  # a parser for one connection (EventParser's interface)
    heartbeat: float  # seconds between the stream's heartbeats
    comments: bool  # heartbeats are SSE comments (they count as signs of life)
