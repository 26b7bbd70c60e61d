"""OpenCode V2 (2.x): `/api/info`, `/api/session`, `/api/session/active`, forms, `/api/event`
(wire.py: its records as the shared models'; events.py: its frames as the journal's events;
snapshot.py: its snapshot)."""

from __future__ import annotations

from ..base import Protocol
from .events import V2EventParser
from .snapshot import fetch_snapshot_v2

V2 = Protocol("v2", fetch_snapshot_v2, "/api/event", V2EventParser, 15.0, True)
