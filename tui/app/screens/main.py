"""The main screen: server health, counts by state, and the session tree."""

from __future__ import annotations

from textual import events
from textual.actions import SkipAction
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.content import Content
from textual.widgets import Footer, Input, Static

from tui.core.view import View, loaded

from .. import format as fmt
from ..dashboard import OpenDetails
from ..tree import TreeLine, is_group
from ..widgets.activity import DetailsPane
from ..widgets.server_bar import ServerBar, health
from ..widgets.session_table import FOLD_AFTER, SessionTable
from ..widgets.summary import FilterStatus, Summary
from . import session_keys
from .view_screen import ViewScreen

PANE_AT = 140
"""Columns from which the details pane fits beside the table (narrower: `d` opens the
detail view, which shows the same)."""
PANE_MIN, PANE_MAX = 40, 64


def pane_width(screen: int) -> int:
    """About a third of the screen, between PANE_MIN and PANE_MAX columns. The table keeps the
    rest: under WIDE_AT it drops its cost and tokens columns (the pane shows both) and puts the
    stale flag in the reason column, so titles and what is asked keep their room."""
    return max(PANE_MIN, min(PANE_MAX, screen * 35 // 100))


STATE_KEYS = {str(i + 1): state for i, state in enumerate(fmt.STATE_FILTERS)}
"""`1` all · `2` busy · `3` retry · `4` input · `5` idle · `6` unknown · `7` stale · `8` active
(what needs you or runs: input, busy, retry, stale, unknown)."""


def filter_label(state: str) -> str:
    """What a state filter's key does (the help, the palette)."""
    if state == "all":
        return "Show all states"
    if state == "active":
        return "Show what needs you or runs (input, busy, retry, stale, unknown)"
    return f"Show only {state}"


def empty_message(
    view: View | None,
    urls: list[str],
    shown: int,
    *,
    typing: bool = False,
    state_filter: str = "all",
    folded: int = 0,
    looked: list[str] | None = None,
) -> Content | None:
    """What to say when the table shows no row (None when it shows `shown` > 0 rows); `typing`:
    the filter box has the keys (a `1` would type into it), `state_filter`: the table's,
    `folded`: the old idle rows ageing leaves out, `looked`: what local discovery looked at
    (None: it is off)."""
    servers = list(view.servers) if view is not None else []
    if shown:
        return None
    if looked is not None and not servers and (view is not None or looked):
        return _nothing_found(looked)
    if view is not None and view.rows:
        if folded and not typing and state_filter == "all":
            return Content.assemble(
                ("Every session has been idle for a long while. ", "bold"),
                ("o", "bold"),
                (f" shows the {folded:,} folded away.", ""),
            )
        if typing:
            return Content.assemble(
                ("No session matches the filter. ", "bold"),
                ("esc", "bold"),
                (" clears the text, ", ""),
                ("enter", "bold"),
                (" goes back to the table.", ""),
            )
        if state_filter != "all":
            return Content.assemble(
                ("No session matches the filter. ", "bold"),
                ("Press ", ""),
                ("1", "bold"),
                (" to show every state, ", ""),
                ("esc", "bold"),
                (" to clear every filter.", ""),
            )
        return Content.assemble(
            ("No session matches the filter. ", "bold"), ("esc", "bold"), (" clears it.", "")
        )
    healths = [health(s) for s in servers]
    if not servers or all(h == "connecting" for h in healths):
        loading = [
            Content.assemble(
                ("Loading the sessions of ", ""),
                (fmt.literal(s.url), "bold"),
                f": {loaded(s.loading)} …",
            )
            for s in servers
            if s.loading is not None
        ]
        if loading:
            return Content("\n").join(loading)
        names = ", ".join(s.url for s in servers) if servers else ", ".join(urls)
        return Content.assemble(("Connecting to ", ""), (fmt.literal(names), "bold"), " …")
    if not any(s.reachable for s in servers):
        lines: list[str | tuple[str, str]] = [
            ("No OpenCode server is reachable.", "bold $state-error"),
            "\n\n",
        ]
        for s in servers:
            lines += [
                "  ",
                (fmt.literal(s.url), "bold"),
                "  ",
                (
                    fmt.literal(fmt.server_error(s.url, s.error) or "not answering"),
                    "$foreground-muted",
                ),
                "\n",
            ]
        if looked:
            lines += ["\nLocal discovery looked at:\n"]
            lines += [("  " + fmt.literal(line) + "\n", "$foreground-muted") for line in looked]
        lines += [
            "\nStart a server in your project folder:  ",
            ("opencode serve --port 4096", "bold"),
            "\nor watch the built-in simulation:       ",
            ("ocwatch demo", "bold"),
            ("\n\nocwatch keeps retrying; this screen updates by itself.", "$foreground-muted"),
        ]
        return Content.assemble(*lines)
    return Content.assemble(
        ("No sessions yet. ", "bold"),
        ("Start one with ", ""),
        ("opencode", "bold"),
        (' (or opencode run "…") in a project folder; it shows up here.', ""),
    )


def _nothing_found(looked: list[str]) -> Content:
    """No server named, and discovery found none (yet): where it looked."""
    if not looked:
        return Content("Looking for OpenCode servers on this machine …")
    lines: list[str | tuple[str, str]] = [
        ("No OpenCode server found on this machine.", "bold"),
        "\n\nLooked at:\n",
    ]
    lines += [("  " + fmt.literal(line) + "\n", "$foreground-muted") for line in looked]
    lines += [
        "\nStart a server in your project folder:  ",
        ("opencode serve", "bold"),
        "\nor the TUI with a port:                 ",
        ("opencode --port 0", "bold"),
        "\nor watch the built-in simulation:       ",
        ("ocwatch demo", "bold"),
        ("\n\nocwatch keeps looking; this screen updates by itself.", "$foreground-muted"),
    ]
    return Content.assemble(*lines)


class MainScreen(ViewScreen):
    """Every session of every server, as a tree."""

    AUTO_FOCUS = "SessionTable"
    _highlighted: tuple[str, str] | None = None
    _counted_lines: tuple[list[TreeLine], int] | None = None  # the table's lines, rows shown
    _folded_for: tuple[list[TreeLine], int] | None = None  # the table's lines, old rows folded
    fold_after = FOLD_AFTER
    """Seconds after which an idle session folds away (the config's fold_idle_after)."""
    BINDINGS = [
        *session_keys.action("r", "respond", "Respond"),
        *session_keys.action("a", "abort", "Abort"),
        *session_keys.action(
            "p", "prompt", "Send the session a prompt (lines; ctrl+s sends)", show=False
        ),
        *session_keys.action(
            "N", "new_session", "New session: a project folder, a first prompt", show=False
        ),
        session_keys.messages(show=False),
        *session_keys.ATTACH,
        session_keys.WEB,
        Binding(
            "d",
            "toggle_pane",
            "Details pane",
            tooltip="The details pane beside the table (narrow: the detail view)",
            show=False,
        ),
        # priority: run as the key is read, so that the keys read with it reach the box (a
        # binding found by bubbling runs after the app has handed them to the table)
        Binding("slash", "filter", "Filter", priority=True),
        Binding("escape", "clear_filters", "Clear filters", show=False),
        Binding("s", "cycle_sort", "Sort"),
        Binding("S", "reverse_sort", "Reverse sort", show=False),
        Binding("space", "toggle_fold", "Fold", show=False),
        Binding("e", "fold_all(False)", "Expand all", show=False),
        Binding("c", "fold_all(True)", "Collapse all", show=False),
        Binding(
            "f",
            "cycle_grouping",
            "Group: folder, server, none",
            tooltip="Group the sessions under a line per folder, then per server, then not",
            show=False,
        ),
        Binding(
            "o",
            "toggle_old",
            "Old idle sessions: show / fold",
            tooltip="Show the sessions idle for longer than fold_idle_after, or fold them again",
            show=False,
        ),
        Binding("i", "app.servers", "Servers: connection, snapshot, drift", show=False),
        *[
            Binding(
                key,
                f"state_filter('{state}')",
                filter_label(state),
                show=False,
            )
            for key, state in STATE_KEYS.items()
        ],
    ]

    def compose(self) -> ComposeResult:
        yield Static(id="banner")  # a replay's controls, or a recording running
        yield ServerBar(id="servers")
        yield Summary(id="summary")
        yield FilterStatus(id="filter-status")
        yield Static(id="empty")
        with Horizontal(id="body"):
            table = SessionTable(id="sessions")
            table.fold_after = self.fold_after
            yield table
            yield DetailsPane(id="pane")
        yield Input(
            placeholder="filter by title, id or folder, or a regular expression (enter "
            "keeps, esc clears)",
            id="filter",
        )
        yield Footer()

    @property
    def table(self) -> SessionTable:
        return self.query_one(SessionTable)

    def on_mount(self) -> None:
        self.query_one("#filter", Input).display = False
        self.dashboard.activity_changed.subscribe(self, self._on_activity)
        self.dashboard.unread_changed.subscribe(self, self.table.set_unread, immediate=True)
        self.follow_view()

    def show_view(self) -> None:
        """Display the dashboard's latest View."""
        app = self.dashboard
        view, now = app.view, app.now
        self.show_banner()
        self.query_one(ServerBar).show(view, now, app.server_urls)
        self.query_one(Summary).show(view)
        if view is not None:
            self.table.show(view, now, unread=app.unread)
        self._refresh_status()
        self.show_pane()

    @property
    def pane(self) -> DetailsPane:
        return self.query_one(DetailsPane)

    def show_pane(self) -> None:
        """The details pane: shown when it fits and is wanted, on the cursor's session."""
        app = self.dashboard
        pane = self.pane
        fits = self.size.width >= PANE_AT
        if not self.is_active:
            # another screen is on top: nothing to read for a pane nobody sees; but one that
            # no longer fits goes (a dialog shows this screen behind it)
            if pane.display and not fits:
                pane.display = False
            return
        want = app.show_pane and fits and bool(app.view is not None and app.view.rows)
        if pane.display != want:
            pane.display = want
        self.table.pane_beside(want)
        if not want:
            return
        width = pane_width(self.size.width)
        if pane.styles.width is None or pane.styles.width.value != width:
            pane.styles.width = width
        key = self.table.cursor_key
        row = app.view.rows.get(key) if key is not None and app.view is not None else None
        pane.show(row, app.inspector.look(row, app.now) if row is not None else None, app.now)

    def _on_activity(self, key: tuple[str, str]) -> None:
        if key == self.table.cursor_key:
            self.show_pane()

    def on_resize(self, event: events.Resize) -> None:
        super().on_resize(event)
        self.show_pane()

    def show_banner(self) -> None:
        """The line above the servers: a replay's state and keys, or a recording running."""
        app = self.dashboard
        banner = self.query_one("#banner", Static)
        said = None
        if app.read_only:
            said = "read-only: abort, reply, answer, prompt, new session and attach are off"
        if app.replay is not None:
            said = fmt.literal(app.replay.status()) + "  (p pause · . step · +/- speed · </> seek)"
        elif app.recording is not None and (status := app.recording.status()) is not None:
            said = (said + " · " if said else "") + fmt.literal(status) + "  (R stops)"
        banner.display = said is not None
        if said is not None:
            banner.update(Content.styled(" " + said, "bold"))

    def _refresh_status(self) -> None:
        table = self.table
        view = self.dashboard.view
        total = len(view.rows) if view is not None else 0
        lines = table.lines
        if self._counted_lines is None or self._counted_lines[0] is not lines:
            self._counted_lines = (lines, sum(1 for line in lines if not line.context))
        shown = self._counted_lines[1]
        if self._folded_for is None or self._folded_for[0] is not lines:
            self._folded_for = (lines, table.folded_old())
        folded = self._folded_for[1]
        self.query_one(FilterStatus).show(
            table.state_filter,
            table.text_filter,
            shown,
            total,
            table.text_kind,
            folded=folded,
            fold_after=table.fold_after,
        )
        typing = isinstance(self.app.focused, Input)
        message = empty_message(
            view,
            self.dashboard.server_urls,
            # a View the table has not laid out yet is not "nothing matches" (that flashed
            # for half a second while a large first View waited for the table's size)
            len(table.lines) or (len(view.rows) if table.behind and view is not None else 0),
            typing=typing,
            state_filter=table.state_filter,
            folded=folded,
            looked=self.dashboard.looked() if self.dashboard.looked is not None else None,
        )
        empty = self.query_one("#empty", Static)
        empty.display = message is not None
        if message is not None:
            empty.update(message)
        has_rows = bool(total)
        if table.display != has_rows:  # no session at all: the message takes the screen
            table.display = has_rows
            if has_rows and self.focused is None:
                table.focus()

    # -- events -------------------------------------------------------------------------------

    def on_session_table_changed(self, _event: SessionTable.Changed) -> None:
        self._refresh_status()

    def on_row_table_row_highlighted(self, event: SessionTable.RowHighlighted) -> None:
        """The row the cursor leaves and the row it reaches have been seen."""
        key = self.table.cursor_key
        if key != self._highlighted:
            self.dashboard.mark_read(self._highlighted)
            self._highlighted = key
            self.show_pane()
        self.dashboard.mark_read(key)

    def on_row_table_row_selected(self, event: SessionTable.RowSelected) -> None:
        event.stop()
        key = self.table.cursor_key
        if key is not None and is_group(key):
            self.table.toggle_fold()  # a group's line: enter folds or unfolds it
        elif key is not None:
            self.post_message(OpenDetails(key))

    def on_descendant_focus(self, _event: events.DescendantFocus) -> None:
        self._refresh_status()  # the no-match hint names the keys that work where keys go

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "filter":
            self.table.set_filters(text=event.value)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "filter":
            event.input.display = False
            self.table.focus()

    # -- actions ------------------------------------------------------------------------------

    def action_filter(self) -> None:
        """Show the filter input (in a text box, the filter's own, `/` is text)."""
        if isinstance(self.focused, Input):
            raise SkipAction()  # the key goes on to the box
        box = self.query_one("#filter", Input)
        box.display = True
        self.set_focus(box)  # at once (Widget.focus waits for the keys already read)

    def action_clear_filters(self) -> None:
        """Clear the text filter (and the state filter when there is no text)."""
        box = self.query_one("#filter", Input)
        had_text = bool(box.value) or box.display
        box.value = ""
        box.display = False
        if had_text:
            self.table.set_filters(text="")
        else:
            self.table.set_filters(state="all", text="")
        self.table.focus()

    def action_toggle_pane(self) -> None:
        """Show or hide the details pane; on a narrow terminal, open the detail view."""
        if self.size.width < PANE_AT:
            key = self.table.cursor_key
            if key is not None:
                self.post_message(OpenDetails(key))
            return
        self.dashboard.show_pane = not self.dashboard.show_pane
        self.show_pane()

    def action_state_filter(self, state: str) -> None:
        """Show only one state (`all` shows every row)."""
        self.table.set_filters(state=state)

    def action_cycle_sort(self) -> None:
        """Sort by the next column."""
        self.table.cycle_sort()

    def action_reverse_sort(self) -> None:
        """Reverse the sort order."""
        self.table.set_sort(self.table.sort_column, not self.table.sort_reverse)

    def action_toggle_fold(self) -> None:
        """Collapse or expand the sub-agents under the cursor."""
        self.table.toggle_fold()

    def action_cycle_grouping(self) -> None:
        """Group the sessions by folder, then by server, then not at all."""
        now = self.table.cycle_grouping()
        said = "not grouped" if now == "none" else f"grouped by {now}"
        self.notify(f"Sessions {said} (f; space or enter folds a group, c folds all)", timeout=3)

    def action_toggle_old(self) -> None:
        """Show the idle sessions ageing folded away, or fold them again."""
        table = self.table
        if table.fold_after <= 0:
            self.notify("Nothing folds away: fold_idle_after is 0 in the config.", timeout=4)
            return
        table.toggle_old()
        said = "shown" if table.show_old else "folded away"
        self.notify(f"Sessions idle for over {fmt.coarse(table.fold_after)}: {said} (o)", timeout=3)

    def action_fold_all(self, collapse: bool) -> None:
        """Collapse or expand every parent."""
        self.table.fold_all(collapse)
