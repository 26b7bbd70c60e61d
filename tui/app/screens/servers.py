"""The servers view: each server's connection, snapshot, skipped events and drift, live.

For whoever runs many servers, or debugs why a session reads as it does: the drift examples say
where the event stream had derived one state and the next snapshot showed another.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.css.query import NoMatches
from textual.widgets import Footer, Static

from tui.core.view import ServerInfo, SessionRow, count_states, loaded

from .. import format as fmt
from ..dashboard import Dashboard
from ..widgets.server_bar import attention, server_line, shown_servers
from ..widgets.summary import COUNTED
from .view_screen import ViewScreen

Part = str | tuple[str, str]
FIELDS = (
    "url",
    "event stream",
    "snapshot",
    "sessions",
    "requests",
    "events skipped",
    "drift",
    "error",
)


def server_fields(server: ServerInfo, rows: list[SessionRow], now: float) -> dict[str, Content]:
    """What the servers view shows of one server, field by field (values shown literally; no
    "error" when there is none)."""
    url = f"{server.name} · {server.url}" if server.name else server.url
    if server.protocol not in (None, "v1"):  # (V1, the first protocol, goes unsaid)
        url += f" · OpenCode {server.protocol.upper()} {server.version or ''}".rstrip()
    out: dict[str, Content] = {"url": Content(fmt.literal(url))}
    stream: list[Part] = ["connected" if server.connected else "not connected"]
    if server.last_event_at is not None:
        stream += [
            (" · last event ", "$foreground-muted"),
            fmt.age(server.last_event_at, now),
            f" ({fmt.clock_time(server.last_event_at, now)})",
        ]
    if server.stream_drop is not None:  # a fault that passed is still worth saying
        at, why = server.stream_drop
        stream += [
            "\n",
            (
                f"{server.reconnects} reconnect{'s' if server.reconnects != 1 else ''}"
                f" · last lost {fmt.clock_time(at, now)}: ",
                "$foreground-muted",
            ),
            fmt.literal(fmt.server_error(server.url, why)),
        ]
    out["event stream"] = Content.assemble(*stream)
    if server.loading is not None:
        out["snapshot"] = Content(f"loading: {loaded(server.loading)} sessions read")
    elif server.snapshot_at is not None:
        out["snapshot"] = Content(
            f"taken {fmt.clock_time(server.snapshot_at, now)} ({fmt.age(server.snapshot_at, now)})"
        )
    else:
        out["snapshot"] = Content.styled("none yet", "$foreground-muted")
    if server.snapshot_at is None and not rows:
        out["sessions"] = Content.styled("– (not read yet)", "$foreground-muted")
    else:
        parts = _counts(rows)
        if server.malformed:  # records the snapshot could not read: said, never hidden
            parts += [
                "\n",
                (
                    f"{server.malformed} malformed record"
                    f"{'s' if server.malformed != 1 else ''} skipped: "
                    + fmt.literal(", ".join(server.malformed_examples)),
                    "$state-error",
                ),
            ]
        out["sessions"] = Content.assemble(*parts)
    rate = server.requests_per_minute
    out["requests"] = Content.assemble(
        f"{rate:.1f} a minute" if rate is not None else "– a minute (measured over a minute)",
        (f" · {server.requests:,} since start", "$foreground-muted"),
        (
            f" · light resyncs every {fmt.duration(server.resync_every)}: the stream vouches"
            if server.vouched and server.resync_every is not None
            else " · light resyncs: the stream vouches"
            if server.vouched
            else "",
            "$foreground-muted",
        ),
    )
    out["events skipped"] = Content(
        f"{server.skipped_events} malformed · {server.unknown_events} of unknown types"
    )
    if server.snapshot_at is None:
        out["drift"] = Content.styled("–", "$foreground-muted")
    elif server.drift_count:
        drift: list[Part] = [
            f"{server.drift_count} time{'s' if server.drift_count != 1 else ''} the events had "
            "derived a state the next snapshot did not show"
        ]
        for example in server.drift_examples:
            drift += ["\n", ("• ", "$foreground-muted"), fmt.literal(example)]
        out["drift"] = Content.assemble(*drift)
    else:
        out["drift"] = Content.styled(
            "none: every snapshot agreed with the events", "$foreground-muted"
        )
    if server.error:
        out["error"] = Content.styled(
            fmt.literal(fmt.server_error(server.url, server.error)), "$state-error"
        )
    return out


def _counts(rows: list[SessionRow]) -> list[Part]:
    """`12: busy 3, input 2, idle 7, stale 1` (only the states some row is in, coloured)."""
    counts = count_states(rows)
    parts: list[Part] = [f"{len(rows)}"]
    shown = [(f"{name} {counts[name]}", style) for name, _, style in COUNTED if counts[name]]
    for i, item in enumerate(shown):
        parts += [": " if i == 0 else ", ", item]
    return parts


class ServerPanel(Vertical):
    """One server: its health line, then one labelled field a line (values wrap in their
    column)."""

    DEFAULT_CSS = """
    ServerPanel {
        height: auto;
        margin-top: 1;
    }
    ServerPanel > Horizontal {
        height: auto;
    }
    ServerPanel .field-name {
        width: 17;
        padding-left: 2;
        color: $foreground-muted;
    }
    ServerPanel .field-value {
        width: 1fr;
    }
    """

    def __init__(self, server: ServerInfo, rows: list[SessionRow], now: float) -> None:
        super().__init__()
        self.url = server.url
        self._shown = (server, rows, now)
        self._ready = False

    def compose(self) -> ComposeResult:
        yield Static(classes="server-line")
        for name in FIELDS:
            with Horizontal(classes=f"field-{name.replace(' ', '-')}"):
                yield Static(name, classes="field-name")
                yield Static(classes="field-value")

    def on_mount(self) -> None:
        self._ready = True
        self.show(*self._shown)

    def show(self, server: ServerInfo, rows: list[SessionRow], now: float) -> None:
        self._shown = (server, rows, now)
        if not self._ready:  # on_mount shows it
            return
        try:
            line = self.query_one(".server-line", Static)
        except NoMatches:  # removed before its children were composed
            return
        line.update(server_line(server, now))
        fields = server_fields(server, rows, now)
        for name in FIELDS:
            row = self.query_one(f".field-{name.replace(' ', '-')}", Horizontal)
            value = fields.get(name)
            row.display = value is not None
            if value is not None:
                row.query_one(".field-value", Static).update(value)


#: Servers that left shown at most in the servers view (the latest)
GONE_SHOWN = 20


class ServersScreen(ViewScreen):
    """Each server's connection, snapshot, skipped events and drift; updates live."""

    BINDINGS = [
        Binding("escape,i", "back", "Back"),
    ]

    def __init__(self, dashboard: Dashboard) -> None:
        super().__init__(dashboard)
        self._panels: dict[str, ServerPanel] = {}  # by server URL, in the View's order
        self._gone: Static | None = None  # the servers that left, under the panels

    def compose(self) -> ComposeResult:
        yield Static(Content.styled("Servers", "bold"), id="servers-title")
        yield VerticalScroll(id="servers-body")
        yield Footer()

    def on_mount(self) -> None:
        self.follow_view()
        self.query_one("#servers-body").focus()

    def show_view(self) -> None:
        app = self.dashboard
        view = app.view
        listed = shown_servers(view, app.server_urls)
        servers = list({s.url: s for s in listed}.values())  # one panel per URL
        # the ones that need attention first (unreachable, snapshots failing, drift); the
        # order moves only when a server's attention does (a stable sort)
        servers.sort(key=attention)
        by_server: dict[str, list[SessionRow]] = {s.url: [] for s in servers}
        if view is not None:
            for row in view.rows.values():
                by_server.setdefault(row.server, []).append(row)
        body = self.query_one("#servers-body", VerticalScroll)
        urls = [s.url for s in servers]
        if urls != list(self._panels):  # servers came or went, or the order moved
            self._place(body, servers, by_server)
        else:
            for server in servers:
                self._panels[server.url].show(server, by_server.get(server.url, []), app.now)
        self._show_gone(body)

    def _place(
        self,
        body: VerticalScroll,
        servers: list[ServerInfo],
        by_server: dict[str, list[SessionRow]],
    ) -> None:
        """Each server's panel in its place: a new server's mounted, a gone one's removed, the
        others moved and updated. (Removing and mounting every panel whenever one server came
        or went, or the attention order moved, left the view blank for seconds with servers
        coming and going on a loaded machine: seen by hand.)"""
        now = self.dashboard.now
        old, self._panels = self._panels, {}
        for server in servers:
            panel = old.pop(server.url, None)
            if panel is None:
                panel = ServerPanel(server, by_server.get(server.url, []), now)
            else:
                panel.show(server, by_server.get(server.url, []), now)
            self._panels[server.url] = panel
        for panel in old.values():
            panel.remove()
        previous: ServerPanel | None = None
        for panel in self._panels.values():
            if panel.parent is body:
                if previous is None:
                    body.move_child(panel, before=0)
                else:
                    body.move_child(panel, after=previous)
            elif previous is not None:
                body.mount(panel, after=previous)
            elif body.children:
                body.mount(panel, before=0)
            else:
                body.mount(panel)
            previous = panel

    def _show_gone(self, body: VerticalScroll) -> None:
        """The servers that left the fleet (discovery: went away; a servers file: taken out),
        the latest first: said, not silently dropped (a toast is gone in seconds)."""
        gone = sorted((self.dashboard.gone or {}).items(), key=lambda kv: -kv[1][0])
        if not gone and self._gone is None:
            return
        text = Content.styled(f"Gone ({len(gone)})", "bold") if gone else Content("")
        for url, (when, why) in gone[:GONE_SHOWN]:
            said = why if url in why else f"{url} {why}"
            text += Content(f"\n  {fmt.clock_time(when, self.dashboard.now)}  {said}")
        if len(gone) > GONE_SHOWN:
            text += Content(f"\n  … and {len(gone) - GONE_SHOWN} earlier")
        if self._gone is None:
            self._gone = Static(text, id="servers-gone")
            body.mount(self._gone)
        else:
            self._gone.update(text)

    def action_back(self) -> None:
        """Back to the sessions."""
        self.dismiss()
