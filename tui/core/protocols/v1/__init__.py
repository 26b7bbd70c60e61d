"""OpenCode V1 (1.x, last 1.18.33): `/global/health`, `/experimental/session`, the per-folder
status, permission and question maps, `/global/event`. Its reader and parser are the core's
first ones (tui.core.snapshot, tui.core.events), whose shapes are the shared models'."""

from __future__ import annotations

from ...events import EventParser
from ...snapshot import fetch_snapshot
from ..base import Protocol

V1 = Protocol("v1", fetch_snapshot, "/global/event", EventParser, 10.0, False)
