"""The header: one line of connection health per server."""

from __future__ import annotations

from textual.content import Content

from tui.core.view import ServerInfo, View, loaded

from .. import format as fmt
from .live_static import LiveStatic

# health -> (glyph, word, theme variable)
HEALTH = {
    "connected": ("●", "connected", "$state-idle"),
    "stalled": ("◐", "stalled", "$state-retry"),
    "reconnecting": ("↻", "reconnecting", "$state-retry"),
    "unreachable": ("✗", "unreachable", "$state-error"),
    "foreign": ("✗", "not OpenCode", "$state-error"),  # it answers, but speaks no protocol
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
    """Connection health of every server, one line each."""

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
        lines = [server_line(s, now) for s in shown_servers(view, urls)]
        self.show_content(Content("\n").join(lines))
