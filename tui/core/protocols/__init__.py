"""The protocols OpenCode servers speak, each behind one seam.

V1 (1.x, last 1.18.33) and V2 (2.x) differ in their routes, their event stream and how their
facts become a session's inputs; everything after the inputs (journal, derive, the View, the
transitions and every consumer) is shared. A `Protocol` (base.py) names what differs: how a
snapshot is read, the event stream's route and parser, and how often its heartbeat comes. A
server is probed by the first request of each full snapshot (V1's `/global/health`, V2's
`/api/info`); adding a protocol is adding a folder beside `v1/` and `v2/` and its entry here.
"""

from __future__ import annotations

from .base import Protocol
from .v1 import V1
from .v2 import V2

PROTOCOLS = {p.name: p for p in (V1, V2)}

__all__ = ["PROTOCOLS", "V1", "V2", "Protocol"]
