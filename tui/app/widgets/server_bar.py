"""The header: one line of connection health per server."""

from __future__ import annotations

from textual.content import Content

from tui.core.view import ServerInfo, View, loaded
from tui.core.words import DOWN_GLYPH

from .. import format as fmt
from .live_static import LiveStatic

# health -> (glyph, word, theme variable)
HEALTH = {
    "connected": ("●", "connected", "$state-idle"),
    "stalled": ("◐", "stalled", "$state-retry"),
    "reconnecting": ("↻", "reconnecting", "$state-retry"),
    "unreachable": (DOWN_GLYPH, "unreachable", "$state-error"),
    "foreign": (DOWN_GLYPH, "not OpenCode", "$state-error"),  # it answers, but speaks no protocol
    "connecting": ("…", "connecting", "$foreground-muted"),
}


def health(server: ServerInfo) -> str:
    """How a server's connection reads: connected, stalled (a heartbeat missed), reconnecting,
    unreachable, not OpenCode (it answers, but speaks no OpenCode protocol) or connecting."""
    if server.reachable:
        if not server.connected:
            return "reconnecting"
        return "stalled" if server.stream == "stalled" else "connected"
    if server.foreign:
        return "foreign"
    if server.error or server.snapshot_at is not None:
        return "unreachable"
    return "connecting"


MANY = 4
"""Servers from which the header is one line of counts (the servers view, i, lists each)."""

_ATTENTION = {"unreachable": 0, "foreign": 0, "reconnecting": 3, "stalled": 3, "connecting": 4}


def attention(server: ServerInfo) -> tuple[int, int]:
    """Lower first: unreachable (or not OpenCode), then snapshots failing, then drift, then
    reconnecting or stalled, then connecting; the healthy last (the servers view's order)."""
    state = health(server)
    rank = _ATTENTION.get(state, 5)
    if rank == 5 and server.error:
        rank = 1  # the stream beats, the snapshots fail
    elif rank == 5 and server.drift_count:
        rank = 2 if server.drift_count > 10 else 4
    return rank, -server.drift_count


def fleet_line(servers: list[ServerInfo], width: int = 0) -> Content:
    """Many servers in one line (of `width` cells at most, when given): how many in each
    health, those failing snapshots, the first that needs attention named
    (`✗ 1 unreachable  ● 7 connected  first: build-3  8 servers (i: each)`); shorter forms
    (glyphs and counts) when the long one does not fit."""
    counts: dict[str, int] = {}
    for s in servers:
        counts[health(s)] = counts.get(health(s), 0) + 1
    failing = sum(1 for s in servers if s.reachable and s.error)
    worst = min(servers, key=attention)
    first = fmt.literal(worst.label) if attention(worst)[0] < 5 else None
    forms = []
    for short in (False, True):
        parts: list[str | tuple[str, str]] = []
        for state in ("unreachable", "foreign", "reconnecting", "stalled", "connecting"):
            if state in counts:
                glyph, word, style = HEALTH[state]
                said = f"{glyph} {counts[state]}" + ("" if short else f" {word}")
                parts += [(said, f"{style} bold"), "  "]
        if "connected" in counts:
            glyph, word, style = HEALTH["connected"]
            said = f"{glyph} {counts['connected']}" + ("" if short else f" {word}")
            parts += [(said, f"{style} bold"), "  "]
        if failing:
            parts += [(f"{failing} failing" + ("" if short else " snapshots"), "$state-retry")]
            parts += ["  "]
        if first is not None:
            parts += [("first: ", "$foreground-muted"), (first, "bold"), "  "]
        total = f"{len(servers)} servers"
        forms.append(Content.assemble(*parts, (f"{total} (i: each)", "$foreground-muted")))
        forms.append(Content.assemble(*parts, (total, "$foreground-muted")))
    for form in forms:
        if not width or form.cell_length <= width:
            return form
    return forms[-1]


def shown_servers(view: View | None, urls: list[str]) -> list[ServerInfo]:
    """The servers of `view`, or the configured URLs (not yet connected) before the first View."""
    if view is not None and view.servers:
        return list(view.servers)
    return [ServerInfo(url=url) for url in urls]


def server_line(server: ServerInfo, now: float) -> Content:
    """`● connected  127.0.0.1:4096  v1.2.3  last event 3s ago` (errors shown literally)."""
    state = health(server)
    glyph, word, style = HEALTH[state]
    parts: list[str | tuple[str, str]] = [
        (f"{glyph} {word:<12}", f"{style} bold"),
        " ",
        (fmt.literal(server.name or fmt.server_label(server.url)), "bold"),
    ]
    if server.version:
        parts += ["  ", (f"v{fmt.literal(server.version)}", "$foreground-muted")]
    if server.protocol not in (None, "v1"):  # (V1, the first protocol, goes unsaid)
        parts += ["  ", (f"OpenCode {server.protocol.upper()}", "$foreground-muted")]
    if server.loading is not None:
        parts += ["  ", (f"loading sessions {loaded(server.loading)}", "$foreground-muted")]
    elif state == "unreachable" and server.error_since is not None:
        # how long it has been down, not its last event ("last event now" beside
        # "unreachable" read as a contradiction)
        parts += ["  ", ("down ", "$foreground-muted"), fmt.duration(now - server.error_since)]
    elif server.last_event_at is not None:
        parts += ["  ", ("last event ", "$foreground-muted"), fmt.age(server.last_event_at, now)]
    elif server.reachable:
        parts += ["  ", ("no event yet", "$foreground-muted")]
    if server.drift_count:
        parts += ["  ", (f"drift {server.drift_count}", "$foreground-muted")]
    if server.error and state != "connected":
        parts += ["  ", (fmt.literal(fmt.server_error(server.url, server.error)), style)]
    elif server.error:  # the stream beats, the snapshots fail: live, but nothing checks it
        parts += [
            "  ",
            ("snapshots failing: ", "$state-retry"),
            (fmt.literal(fmt.server_error(server.url, server.error)), "$state-retry"),
        ]
    if state in ("unreachable", "foreign"):
        parts += ["  ", ("retrying", "$foreground-muted italic")]
    return Content.assemble(*parts)


class ServerBar(LiveStatic):
    """Connection health of every server, one line each (from MANY servers, one line)."""

    DEFAULT_CSS = """
    ServerBar {
        height: auto;
        padding: 0 1;
    }
    """

    async def on_click(self) -> None:
        """A click on a server opens the servers view."""
        await self.run_action("app.servers")

    def show(self, view: View | None, now: float, urls: list[str]) -> None:
        """Show the servers of `view` (or the configured URLs before the first View)."""
        servers = shown_servers(view, urls)
        if len(servers) >= MANY:  # the header stays one line
            # (its padding; not laid out yet, as a first View can come: the width it will have,
            # the screen's less its padding, or the first paint differs from every later one)
            width = (self.size.width or self.app.size.width - 2) - 2
            self.show_content(fleet_line(servers, width))
            return
        lines = [server_line(s, now) for s in servers]
        self.show_content(Content("\n").join(lines))
