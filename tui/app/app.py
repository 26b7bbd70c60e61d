"""The ocwatch Textual app: a consumer of Views, built by `create_app()` for the CLI and tests.

One long-lived worker runs the `ViewSource`; its `notify` callback only sets a dirty flag and,
PULL_INTERVAL after the last pull (longer when a pull is costly: PULL_SHARE),
`source.current(now)` is pulled (so a flood of changes becomes at most 20 redraws a second); a
change that can settle a row is pulled at once (URGENT_PULL_INTERVAL); a timer also pulls at
least once a second so times count up and grace periods expire on screen. Each new
View is compared with the previous one: the transitions feed the alerts and the unread marks.

Actions (abort, reply, answer) go through an `Actions` object (`tui.app.actions`); the View, not
the action, changes the rows.
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
import os
import subprocess
import time
import webbrowser
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

from textual import work
from textual.app import App, SuspendNotSupported, SystemCommand
from textual.binding import Binding
from textual.driver import Driver
from textual.screen import Screen
from textual.signal import Signal

from tui.core.config import AlertConfig
from tui.core.paths import state_dir
from tui.core.settings import default_server_urls
from tui.core.source import ViewSource
from tui.core.view import SessionRow, View

from . import format as fmt
from .alerts import Attention, app_sinks
from .dashboard import Dashboard, OpenDetails
from .heap import HeapKeeper
from .inspect import Inspector
from .launch import Launch, LaunchError, has_graphical_browser, web_url
from .options import DashboardOptions
from .respond import Responder
from .screens.confirm import ConfirmScreen
from .screens.conversation import TOOL_ACTIONS, ConversationScreen
from .screens.detail import DetailScreen
from .screens.dialog import PAGE_EXTRA, SCROLL_EXTRA
from .screens.help import DETAIL_EXTRA, NAVIGATION, HelpScreen, binding_rows
from .screens.main import MainScreen
from .screens.permission import PermissionScreen
from .screens.question import QUESTION_EXTRA, QuestionScreen
from .screens.servers import ServersScreen
from .screens.session_keys import ACTIONS
from .themes import DEFAULT_THEME, load_themes
from .tree import is_group
from .widgets.cells import COLUMNS
from .widgets.session_table import SessionTable

Key = tuple[str, str]
OFF = "abort, reply, answer, prompt, new session and attach are off"
READ_ONLY = f"Read-only dashboard: {OFF}."
REPLAY_OFF = f"This is a replay of a recording: {OFF}."
PULL_INTERVAL = 0.05
"""Least seconds from a pull to the next one for a change that cannot settle a row (at most 20
redraws a second; a longer wait when a pull is costly: PULL_SHARE)."""
TICK_CHECK = 0.25
"""How often the timer checks whether a second has passed since the last pull (an idle
dashboard wakes 4 times a second, not 20)."""
TICK_INTERVAL = 1.0
"""Seconds between pulls even without a change (time in state counts up)."""
URGENT_PULL_INTERVAL = 0.01
"""Least seconds between a pull and one for an event that can settle a row (a run ended,
something asked or answered: ServerMonitor's urgent notify), drawn at once rather than at the
next PULL_INTERVAL slot."""
PULL_SHARE = 0.15
"""The share of the time a flood of changes that cannot settle a row (streamed output, a busy
status repeated) may spend pulling: after a pull that took `t` s, the next such pull waits at
least `t / PULL_SHARE` (at most LOADING_PULL_INTERVAL). `t` is wall time: on a machine short
of CPU a pull takes longer and the screen gives way to the stream's reading. A pull of 2,000
rows with 200 of them streaming takes 10-15 ms (p95 about 20; the paint after it is not
counted); at 20 a second it took a third of the core the stream's reading needs (issue 42).
Urgent changes (URGENT_PULL_INTERVAL) are not held back by it."""
LOADING_PULL_INTERVAL = 0.25
"""Seconds between pulls while a server's first snapshot is still reading last messages (the
table shows its rows already): each pull repaints every row, and the reading shares this
process's one core with the painting. Also the longest PULL_SHARE spaces pulls."""


class OcwatchApp(App[None]):
    """The dashboard. Holds no state logic: it shows the Views its source derives."""

    CSS_PATH = "ocwatch.tcss"
    TITLE = "ocwatch"
    BINDINGS = [
        Binding("q", "quit", "Quit"),
        Binding("question_mark", "help", "Help"),
        Binding("t", "next_theme", "Next theme", show=False),
        Binding("R", "toggle_recording", "Record (start / stop)", show=False),
    ]

    def __init__(self, source: ViewSource, options: DashboardOptions | None = None) -> None:
        """The dashboard on `source`, built with `options` (None: every default)."""
        o = options or DashboardOptions()
        super().__init__()
        self.terminal_driver: Driver | None = None
        """The driver of the terminal the app runs on, once it runs (see `get_driver_class`)."""
        config = o.alerts or AlertConfig()
        self.handed_over = False
        """The terminal is handed over to another program (A outside tmux): nothing may be
        written to it (frames are held by a batch; the bell and OSC 9 alerts are skipped)."""
        sinks = app_sinks(
            config,
            self.ring,
            self.osc,
            focused=lambda: self.app_focus,
        )
        self.attention = Attention(config, sinks + ([o.deliverer] if o.deliverer else []))
        self.activity_changed: Signal[Key] = Signal(self, "activity-changed")
        self.inspector = Inspector(self, o.peek, changed=self.activity_changed.publish)
        """Reads what the selected session is doing (None peek: no live server)."""
        self.dashboard = Dashboard(
            self,
            o.clock,
            list(o.server_urls or ()),
            inspector=self.inspector,
            activity_changed=self.activity_changed,
            unread=self.attention.unread,
            read=self.attention.read,
            history=source.history,
            raw=getattr(source, "raw", None),  # live servers and replays have it
            read_only=o.read_only,
            replay=o.replay,
            recording=o.recording,
        )
        """What the screens read (the app is its only writer)."""
        self.dashboard.looked = o.looked
        self.dashboard.gone = getattr(source, "gone", None)  # a live fleet's (Fleet.gone)
        self.read_only = o.read_only
        """Every action is off (abort, reply, answer, attach): a wall screen."""
        self.launcher = o.launcher
        """Builds the command that attaches OpenCode to a session (A); None: no live server."""
        self.recording = o.recording
        """Starts and stops a recording of the live servers (R), when there are some."""
        self.replay = o.replay
        """A recording's controls when the source is a replay (`ocwatch replay`)."""
        self.deliverer = o.deliverer
        """Delivers alerts off the terminal (--notify-cmd, --webhook) on a worker of its own."""
        if o.deliverer is not None:
            o.deliverer.report = lambda text: self.notify(
                text, title="Alerts", severity="warning", timeout=15, markup=False
            )
        self.observers = list(o.observers)
        """Called with each new View and its changes (e.g. the metrics of `--metrics`)."""
        self.source = source
        self.clock = o.clock
        self.server_urls = list(o.server_urls or ())
        self.view_changed = self.dashboard.view_changed
        self._dirty = True
        self._urgent_pending = False
        self._pull_scheduled = False  # a pull for a change is scheduled (mark_dirty)
        self._pulled_at = -math.inf
        self._pull_took = 0.0  # seconds the last pull took (PULL_SHARE)
        self._loading = False  # a server's first snapshot is loading (LOADING_PULL_INTERVAL)
        self._source_failures = 0
        self.startup_message: str | None = None
        """Shown once as a notification when the app starts (e.g. what the demo is)."""
        self.notices = list(o.notices)
        """Config problems, shown as warnings when the app starts (never fatal)."""
        self.actions_off: str | None = (
            READ_ONLY if o.read_only else REPLAY_OFF if o.replay is not None else None
        )
        """Why the actions (ACTIONS) are off, said when one of their keys is pressed; None:
        they are on."""
        self.responder = Responder(self, None if o.read_only else o.actions)
        if self.actions_off is not None:
            self.responder.no_actions = self.actions_off
        self.heap = HeapKeeper()
        loaded = load_themes(o.user_theme_dir)
        self.theme_warnings = list(loaded.warnings)
        self.ocwatch_themes: list[str] = []
        for t in loaded.themes:
            self.register_theme(t)
            if t.name not in self.ocwatch_themes:
                self.ocwatch_themes.append(t.name)
        name = o.theme or DEFAULT_THEME
        if name not in self.ocwatch_themes:
            self.theme_warnings.append(
                f"Unknown theme {name!r}; using {DEFAULT_THEME}. "
                f"Available: {', '.join(self.ocwatch_themes)}"
            )
            name = DEFAULT_THEME
        self.theme = name
        # the palette's theme picker, `t` and --theme offer the same themes: ocwatch's (and
        # the user's), which define the state colours; Textual's own do not
        for other in [n for n in self.available_themes if n not in self.ocwatch_themes]:
            self.unregister_theme(other)
        self.main_screen = MainScreen(self.dashboard)
        if o.fold_idle_after is not None:
            self.main_screen.fold_after = o.fold_idle_after

    # -- Textual hooks ------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """In read-only mode and in a replay the actions are not offered (the footer and the
        palette leave them out); their keys fall through to `off`, which says why, but for a
        replay's `p`, which pauses it (a binding of the app's, found after the screens')."""
        if action in ACTIONS:
            return self.actions_off is None
        if action == "off":
            return self.actions_off is not None and not (
                parameters == ("prompt",) and self.replay is not None
            )
        return True

    def action_off(self, action: str) -> None:
        """A key whose action is off, pressed: say so (never a key that does nothing)."""
        self.notify(self.actions_off or READ_ONLY, severity="warning", timeout=5, markup=False)

    def get_default_screen(self) -> Screen[None]:
        return self.main_screen

    def get_theme_variable_defaults(self) -> dict[str, str]:
        """State colours for themes that do not define them (e.g. Textual's own themes)."""
        colors = self.current_theme.to_color_system().generate()
        return {variable: colors[fallback] for variable, fallback in fmt.THEME_FALLBACKS.items()}

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        # Textual's "Keys" panel is left out: squeezed beside the table, closed only from the
        # palette again; "Help" (?) says every key, in a screen esc closes
        yield from (c for c in super().get_system_commands(screen) if c.title != "Keys")
        for state in fmt.STATE_FILTERS:
            title = (
                "Show all states"
                if state == "all"
                else "Show what needs you or runs"
                if state == "active"
                else f"Show only {state} sessions"
            )
            yield SystemCommand(
                title,
                f"Filter the session table by state ({state})",
                partial(self._state_filter, state),
            )
        for name in self.ocwatch_themes:
            yield SystemCommand(
                f"Theme: {name}",
                f"Switch to the {name} theme",
                partial(setattr, self, "theme", name),
            )
        for spec in COLUMNS:
            yield SystemCommand(
                f"Sort by {spec.label}",
                f"Sort the session table by {spec.label}",
                partial(self._sort, spec.key),
            )
        yield SystemCommand(
            "Expand all", "Show every sub-agent", partial(self.main_screen.action_fold_all, False)
        )
        yield SystemCommand(
            "Collapse all", "Fold every parent", partial(self.main_screen.action_fold_all, True)
        )
        yield SystemCommand("Help", "Every key and what each state glyph means", self.action_help)
        if self.recording is not None:
            on = self.recording.active
            yield SystemCommand(
                "Stop recording" if on else "Start recording",
                "Every raw event and snapshot answer to a file, for replay and bug reports (R)",
                self.action_toggle_recording,
            )
        yield SystemCommand(
            "Servers",
            "Each server's connection, snapshot, skipped events and drift (i)",
            self.action_servers,
        )
        key = self.selected_key(screen)
        if key is not None:
            yield SystemCommand(
                "Conversation of the selected session",
                "Its prompts, replies, tool calls and errors, following new ones (m)",
                self.action_conversation,
            )
            yield SystemCommand(
                "Open the selected session in the web UI",
                "The server's web page of the session; its address is copied too (w)",
                self.action_web,
            )
        if key is not None and self.actions_off is None:
            yield SystemCommand(
                "Open the selected session in OpenCode",
                "Attach OpenCode's own TUI to it; quit there to come back (A)",
                self.action_attach,
            )
            yield SystemCommand(
                "Respond to the selected session",
                "Answer its open permission or question (r)",
                partial(self.responder.respond, key),
            )
            yield SystemCommand(
                "Abort the selected session",
                "Stop its run, after a confirmation (a)",
                partial(self.responder.abort, key),
            )

    #: The keys of a replay (`ocwatch replay`), bound only then
    REPLAY_KEYS = (
        ("p", "replay_pause", "Pause/play"),
        ("full_stop", "replay_step", "Step"),
        ("plus", "replay_speed(1)", "Faster"),
        ("minus", "replay_speed(-1)", "Slower"),
        ("greater_than_sign", "replay_seek(30)", "+30s"),
        ("less_than_sign", "replay_seek(-30)", "-30s"),
    )

    def action_replay_pause(self) -> None:
        if self.replay is not None:
            self.replay.toggle_pause()
            self.mark_dirty()

    def action_replay_step(self) -> None:
        if self.replay is not None:
            self.replay.step_once()

    def action_replay_speed(self, by: int) -> None:
        if self.replay is not None:
            self.replay.faster(by)
            self.mark_dirty()

    def action_replay_seek(self, seconds: float) -> None:
        if self.replay is not None:
            self.replay.seek(seconds)

    def on_mount(self) -> None:
        if self.replay is not None:
            for key, action, label in self.REPLAY_KEYS:
                self.bind(key, action, description=label)
        if self.startup_message:
            self.notify(self.startup_message, timeout=10, markup=False)
        for warning in self.theme_warnings:
            self.notify(warning, title="Themes", severity="warning", timeout=15, markup=False)
        for notice in self.notices:
            self.notify(notice, title="Config", severity="warning", timeout=15, markup=False)
        for note in self.replay.notes if self.replay is not None else ():
            self.notify(note, title="Recording", severity="warning", timeout=30, markup=False)
        self.pull()
        self.set_interval(TICK_CHECK, self._tick)
        self._run_source()
        if self.deliverer is not None:
            self.run_worker(self.deliverer.run(), name="alert deliveries", exit_on_error=False)

    def on_unmount(self) -> None:
        self.heap.release()
        if self.recording is not None and self.recording.active:
            self.recording.stop()  # the file ends cleanly

    def action_toggle_recording(self) -> None:
        """Start recording every raw event and snapshot answer, or stop (docs/RECORDING.md)."""
        if self.recording is None:
            self.notify(
                "Recording needs live servers (ocwatch record, or this dashboard on them).",
                severity="warning",
                timeout=5,
            )
            return
        if self.recording.active:
            done = self.recording.stop()
            if done is not None:
                self.notify(
                    f"Recorded {done.records:,} records ({done.size() / 2**20:.1f} MB) "
                    f"to {done.path}; ocwatch replay opens it.",
                    title="Recording",
                    timeout=10,
                    markup=False,
                )
        else:
            try:
                path = self.recording.start()
            except OSError as exc:
                self.notify(
                    f"Cannot record: {exc.strerror or exc}",
                    severity="error",
                    timeout=8,
                    markup=False,
                )
                return
            self.notify(
                f"Recording to {path} (R stops).", title="Recording", timeout=6, markup=False
            )
        self.main_screen.show_banner()

    # -- the View ------------------------------------------------------------------------------

    def mark_dirty(self) -> None:
        """The source's `notify`: cheap, may be called at any rate; changes are coalesced.

        The first change after a quiet spell is pulled at once; a change that follows a pull
        within the pull spacing (`_spacing`) is pulled when that is up: a flood becomes at most
        20 redraws a second, fewer when a pull is costly. One pull at most is scheduled at a
        time; a pull made meanwhile for another reason (urgent) moves it on."""
        if self._dirty:
            return
        self._dirty = True
        if not self._pull_scheduled:
            self._schedule_pull()

    def _spacing(self) -> float:
        """Least seconds from a pull to the next one for a change that cannot settle a row."""
        if self._loading:
            return LOADING_PULL_INTERVAL
        return min(LOADING_PULL_INTERVAL, max(PULL_INTERVAL, self._pull_took / PULL_SHARE))

    def _schedule_pull(self) -> None:
        self._pull_scheduled = True
        wait = self._pulled_at + self._spacing() - time.monotonic()
        if wait <= 0:
            self.call_next(self._pull_when_due)
        else:
            self.set_timer(wait, self._pull_when_due)

    def _pull_when_due(self) -> None:
        """The scheduled pull: made if a change is still to show and the spacing since the last
        pull (which may have been made since, for an urgent change) is up; else scheduled again
        for when it is."""
        self._pull_scheduled = False
        if not self._dirty:
            return
        if self._pulled_at + self._spacing() > time.monotonic():
            self._schedule_pull()
            return
        self.pull()

    def mark_urgent(self) -> None:
        """The source's urgent `notify`: a change that can settle a row, pulled at once (at
        most one such pull every URGENT_PULL_INTERVAL; while a first snapshot loads, as any)."""
        if self._loading:
            self.mark_dirty()
            return
        self._dirty = True
        if self._urgent_pending:
            return
        self._urgent_pending = True
        wait = self._pulled_at + URGENT_PULL_INTERVAL - time.monotonic()
        if wait <= 0:
            self.call_next(self._pull_urgent)
        else:
            self.set_timer(wait, self._pull_urgent)

    def _pull_urgent(self) -> None:
        self._urgent_pending = False
        if self._dirty:
            self.pull()

    def _tick(self) -> None:
        """Pull at least once a second, changed or not (times count up, grace periods end)."""
        if time.monotonic() - self._pulled_at >= TICK_INTERVAL:
            self.pull()
        self.heap.maintain()
        if self.recording is not None:
            self.recording.tick()  # (a burst then silence reaches the disk within a second)

    def pull(self) -> None:
        """Read the source's current View and show it."""
        if not self.screen_stack:
            # the app is shutting down (its screens are gone; a queued pull or the tick can
            # still come): there is no one to show a change to, or to alert
            return
        self._dirty = False
        self._pulled_at = time.monotonic()
        now = self.clock()
        try:
            view = self.source.current(now)
        except Exception as error:  # a source bug must not take the dashboard down
            self.log.error(f"ViewSource.current failed: {error!r}")
            return
        before = self.view
        self.dashboard.view, self.dashboard.now = view, now
        self._loading = any(s.loading is not None for s in view.servers)
        if view is not before:
            self.attention.apply(self.source.last_changes, self.looking_at)
            self.responder.forget_closed()
            for observe in self.observers:
                observe(view, self.source.last_changes)
        self.view_changed.publish(view)
        if self.responder.select_when_shown is not None:
            self.call_after_refresh(self.responder.select_new)
        if view.rows:  # sessions are loaded: once on screen, freeze them out of the GC's walks
            self.heap.loaded(self.call_after_refresh, complete=not self._loading)
        self._pull_took = time.monotonic() - self._pulled_at

    # -- attention ------------------------------------------------------------------------------

    @property
    def unread(self) -> set[Key]:
        """Rows that changed while the user looked elsewhere."""
        return self.attention.unread

    def looking_at(self, key: Key) -> bool:
        """Whether the user sees this row now: the highlighted row of the table, the session of
        the open detail view or dialog, and only while the terminal has the focus."""
        if not self.app_focus:
            return False
        screen = self.screen
        if screen is self.main_screen:
            return self.main_screen.table.cursor_key == key
        return getattr(screen, "session_key", None) == key

    def mark_read(self, key: Key | None) -> None:
        """The user looked at this row: clear its unread mark."""
        self.dashboard.mark_read(key)

    @property
    def view(self) -> View | None:
        """The latest View (Dashboard.view)."""
        return self.dashboard.view

    @view.setter
    def view(self, view: View | None) -> None:
        self.dashboard.view = view

    @property
    def now(self) -> float:
        """The clock the latest View was derived at."""
        return self.dashboard.now

    @property
    def show_pane(self) -> bool:
        return self.dashboard.show_pane

    @show_pane.setter
    def show_pane(self, value: bool) -> None:
        self.dashboard.show_pane = value

    def write_terminal(self, data: str) -> None:
        """Write an escape sequence (OSC 9) to the terminal, between two frames."""
        if not self.is_headless and self.terminal_driver is not None:
            self.terminal_driver.write(data)

    def ring(self) -> None:
        """The bell alert (not while another program has the terminal)."""
        if not self.handed_over:
            self.bell()

    def osc(self, data: str) -> None:
        """An OSC 9 alert (not while another program has the terminal)."""
        if not self.handed_over:
            self.write_terminal(data)

    @contextmanager
    def _hand_over(self) -> Iterator[None]:
        """The terminal to another program, for the block: no frame is drawn (a batch held
        open) and no alert writes to it; headless (tests) there is no terminal to give."""
        self.handed_over = True
        try:
            if self.is_headless:
                yield
            else:
                with self.batch_update(), self.suspend():
                    yield
        finally:
            self.handed_over = False

    def get_driver_class(self) -> type[Driver]:
        """The platform's driver, made to say it drives this app's terminal (Textual keeps its
        own reference to it private): `write_terminal` writes through it."""
        return announcing(super().get_driver_class())

    @work(exclusive=True, exit_on_error=False, group="source")
    async def _run_source(self) -> None:
        """Run the source until the app exits; restart it (with backoff) if it fails."""
        delay = 1.0
        while True:
            try:
                await self.source.run(_Notify(self.mark_dirty, self.mark_urgent))
                return
            except Exception as error:
                self._source_failures += 1
                self.notify(
                    f"The view source stopped ({fmt.literal(str(error))}); "
                    f"restarting in {delay:.0f}s",
                    severity="error",
                    markup=False,
                )
                await asyncio.sleep(delay)
                delay = min(delay * 2, 30.0)

    # -- navigation ---------------------------------------------------------------------------

    def open_details(self, key: Key) -> None:
        """Open the detail view of a session."""
        self.mark_read(key)
        screen = self.screen
        if isinstance(screen, DetailScreen) and screen.key == key:
            return
        self.push_screen(DetailScreen(self.dashboard, key))

    def on_open_details(self, message: OpenDetails) -> None:
        self.open_details(message.key)

    def selected_key(self, screen: Screen[Any] | None = None) -> Key | None:
        """The session the user has in front of them: the detail view's, or the cursor's."""
        screen = screen or self.screen
        if isinstance(screen, DetailScreen | ConversationScreen):
            return screen.key
        key = self.main_screen.table.cursor_key
        return None if key is not None and is_group(key) else key  # (a group's line)

    def action_respond(self) -> None:
        """Answer the selected session's first open permission or question."""
        self.responder.respond(self.selected_key())

    def action_prompt(self) -> None:
        """Write the selected session a prompt, sent on confirm."""
        if self.actions_off is not None:  # not offered then; run_action still reaches it
            self.action_off("prompt")
            return
        self.responder.prompt(self.selected_key())

    def action_new_session(self) -> None:
        """A new session: a project folder (the selected row's to start from), a first prompt."""
        self.responder.new_session(self.selected_key())

    def action_abort(self) -> None:
        """Abort the selected session's run (after a confirmation)."""
        self.responder.abort(self.selected_key())

    def row_of(self, key: Key | None) -> SessionRow | None:
        """The View's row of a session an action is for; None, said to the user, when there
        is none (nothing selected, or the session left the View)."""
        view = self.view
        if key is None or view is None:
            self.notify("No session selected.", severity="warning", timeout=3)
            return None
        row = view.rows.get(key)
        if row is None:
            self.notify("This session is no longer in the View.", severity="warning", timeout=4)
        return row

    def _selected_row(self) -> SessionRow | None:
        return self.row_of(self.selected_key())

    def action_conversation(self) -> None:
        """Open the selected session's conversation (its messages, following new ones)."""
        row = self._selected_row()
        if row is None:
            return
        if isinstance(self.screen, ConversationScreen) and self.screen.key == row.key:
            return
        self.mark_read(row.key)
        self.push_screen(ConversationScreen(self.dashboard, row.key, row))

    def action_attach(self) -> None:
        """Suspend the dashboard and run OpenCode's TUI on the selected session; back when it
        exits."""
        if self.actions_off is not None:  # not offered then; run_action still reaches it
            self.action_off("attach")
            return
        row = self._selected_row()
        if row is None:
            return
        if self.launcher is None:
            self.notify(
                "Opening a session in OpenCode needs a live server.", severity="warning", timeout=5
            )
            return
        try:
            launch = self.launcher.attach(row.server, row.id, row.directory)
        except LaunchError as exc:
            self._attach_failed(str(exc))
            return
        if self.launcher.place() != "terminal":
            self._open_beside(launch, row)
            return
        self._attach_here(launch, row)

    @work(exclusive=True, exit_on_error=False, group="attach")
    async def _attach_here(self, launch: Launch, row: SessionRow) -> None:
        """OpenCode on this terminal until it exits; meanwhile the event loop goes on: the
        monitors, the alerts that do not need the terminal and the exporter keep going."""
        code = await self._run_attached(launch)
        if self.launcher is not None:
            self.launcher.refresh(row.server)
        self.mark_dirty()
        if code is not None and code != 0:
            self.notify(
                f"{Path(launch.argv[0]).name} exited with code {code}.",
                title="Open in OpenCode",
                severity="warning",
                timeout=8,
                markup=False,
            )

    def _open_beside(self, launch: Launch, row: SessionRow) -> None:
        """Open the session in a tmux window (or a pane) while the dashboard keeps watching:
        the command and its environment go through a private FIFO, never tmux's argv."""
        from .handover import offer, tmux_argv

        assert self.launcher is not None
        place = self.launcher.place()
        env = dict(os.environ if self.launcher.env is None else self.launcher.env)
        fifo, _thread = offer(launch.argv, launch.env)
        title = fmt.literal(row.title or row.id)
        try:
            done = subprocess.run(
                tmux_argv(place, fifo, title),
                env=env,
                check=False,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=10,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            why = getattr(exc, "strerror", None) or str(exc)
            self._attach_failed(f"Cannot run tmux: {fmt.literal(why)}")
            return
        if done.returncode != 0:
            said = done.stderr.decode("utf-8", "replace").strip().splitlines()
            self._attach_failed(
                f"tmux refused ({fmt.literal(said[0] if said else str(done.returncode))})"
            )
            return
        where = "a pane beside this one" if place == "tmux-split" else "a new tmux window"
        self.notify(f"Opened in {where}; this dashboard keeps watching.", timeout=5, markup=False)

    async def _run_attached(self, launch: Launch) -> int | None:
        """Run the command with the terminal handed over; its exit code (None: not run).
        Awaited, not run in a blocking call: the app's loop (the monitors, the alerts, the
        exporter) goes on while the child has the terminal; nothing is drawn meanwhile (a
        batch held open), and the alerts that write to the terminal (bell, OSC 9) are held
        back (`handed_over`). Headless (tests), it runs without a terminal."""
        quiet = subprocess.DEVNULL if self.is_headless else None
        try:
            with self._hand_over():
                child = await asyncio.create_subprocess_exec(
                    *launch.argv, env=dict(launch.env), stdin=quiet, stdout=quiet, stderr=quiet
                )
                return await child.wait()
        except SuspendNotSupported:
            self._attach_failed(
                "This terminal cannot be handed over to OpenCode; run "
                f"{Path(launch.argv[0]).name} attach in another one."
            )
        except (OSError, ValueError) as exc:
            why = getattr(exc, "strerror", None) or str(exc)
            self._attach_failed(f"Cannot run {launch.argv[0]}: {fmt.literal(why)}")
        return None

    def _attach_failed(self, text: str) -> None:
        """Why `A` could not open the session in OpenCode (text already literal)."""
        self.notify(text, title="Open in OpenCode", severity="error", timeout=10, markup=False)

    def action_web(self) -> None:
        """Open the server's web UI on the selected session (and copy its address)."""
        row = self._selected_row()
        if row is None:
            return
        url = web_url(row.server, row.directory, row.id)
        self.copy_to_clipboard(url)
        if not has_graphical_browser(os.environ):
            self.notify(
                f"{fmt.literal(url)}\n(copied; no graphical browser here to open it)",
                title="Web UI",
                timeout=12,
                markup=False,
            )
            return
        self.run_worker(
            partial(self._open_browser, url), thread=True, group="browser", exit_on_error=False
        )

    def _open_browser(self, url: str) -> None:
        opened = webbrowser.open(url, new=2)
        shown = fmt.literal(url)
        said = f"Opened {shown} (copied too)" if opened else f"{shown}\n(copied; no browser opened)"
        self.call_from_thread(self.notify, said, title="Web UI", timeout=8, markup=False)

    def _state_filter(self, state: str) -> None:
        while isinstance(
            self.screen, DetailScreen | HelpScreen | ServersScreen | ConversationScreen
        ):
            self.pop_screen()
        self.main_screen.action_state_filter(state)

    def _sort(self, column: str) -> None:
        self.main_screen.table.set_sort(column, reverse=False)

    def help_groups(self) -> list[tuple[str, list[tuple[str, str]]]]:
        """Every key, grouped by where it works (read from the bindings)."""
        palette = [(self.COMMAND_PALETTE_BINDING, "Command palette (filters, themes, sort, …)")]
        off = "off: read-only" if self.read_only else "off in a replay" if self.replay else None
        replay = (
            [
                (
                    f"Replay (from the table; {self.replay.path.name})",
                    [
                        (
                            key.replace("full_stop", ".")
                            .replace("plus", "+")
                            .replace("minus", "-")
                            .replace("greater_than_sign", ">")
                            .replace("less_than_sign", "<"),
                            label,
                        )
                        for key, _action, label in self.REPLAY_KEYS
                    ],
                )
            ]
            if self.replay is not None
            else []
        )
        return [
            *replay,
            (
                "Sessions",
                binding_rows(SessionTable.BINDINGS) + binding_rows(MainScreen.BINDINGS, off),
            ),
            ("Details", binding_rows(DetailScreen.BINDINGS, off) + list(DETAIL_EXTRA)),
            (
                "Conversation",
                # (a replay reads no conversation: its tool-call keys are off too)
                binding_rows(
                    ConversationScreen.BINDINGS,
                    off,
                    ACTIONS | TOOL_ACTIONS if self.replay is not None else ACTIONS,
                ),
            ),
            ("Servers", binding_rows(ServersScreen.BINDINGS)),
            ("Permission dialog", binding_rows(PermissionScreen.BINDINGS) + list(SCROLL_EXTRA)),
            (
                "Question dialog",
                binding_rows(QuestionScreen.BINDINGS) + list(QUESTION_EXTRA) + list(PAGE_EXTRA),
            ),
            ("Confirm dialog", binding_rows(ConfirmScreen.BINDINGS)),
            ("Everywhere", binding_rows(self.BINDINGS) + palette),
            ("Table and mouse", list(NAVIGATION)),
            ("This help", binding_rows(HelpScreen.BINDINGS)),
        ]

    def action_servers(self) -> None:
        """Show each server's connection, snapshot, skipped events and drift."""
        if not isinstance(self.screen, ServersScreen):
            self.push_screen(ServersScreen(self.dashboard))

    def action_help(self) -> None:
        """Show every key."""
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(self.help_groups()))

    def deliver_screenshot(
        self, filename: str | None = None, path: str | None = None, time_format: str | None = None
    ) -> str | None:
        """The palette's Screenshot: to the Downloads folder when there is one, else to
        ocwatch's state folder (`~/.local/state/ocwatch/screenshots`), said either way."""
        if path is None:
            from platformdirs import user_downloads_path

            if not user_downloads_path().is_dir():
                target = state_dir() / "screenshots"
                try:
                    target.mkdir(parents=True, exist_ok=True, mode=0o700)
                except OSError as exc:
                    self.notify(
                        f"Cannot save a screenshot in {target}: {exc.strerror or exc}",
                        severity="error",
                    )
                    return None
                path = str(target)
        return super().deliver_screenshot(filename, path, time_format)

    def action_next_theme(self) -> None:
        """Switch to the next ocwatch theme."""
        names = self.ocwatch_themes
        i = names.index(self.theme) if self.theme in names else -1
        self.theme = names[(i + 1) % len(names)]
        self.notify(f"Theme: {self.theme}", timeout=2)


class _Notify:
    """The app's notify for its source: called for any change; `urgent()` for one that can
    settle a row (tui.core.monitor.Notify)."""

    __slots__ = ("_changed", "urgent")

    def __init__(self, changed: Callable[[], None], urgent: Callable[[], None]) -> None:
        self._changed, self.urgent = changed, urgent

    def __call__(self) -> None:
        self._changed()


def create_app(source: ViewSource, options: DashboardOptions | None = None) -> OcwatchApp:
    """Build the dashboard on a ViewSource (the CLI's Fleet, or a StaticSource in tests) with
    `options` (None: every default; see `DashboardOptions`). Servers not named in the options
    are the default ones (`$OPENCODE_SERVER_URL` or http://127.0.0.1:4096)."""
    options = options or DashboardOptions()
    if options.server_urls is None:
        options = dataclasses.replace(options, server_urls=default_server_urls())
    return OcwatchApp(source, options)


def announcing(base: type[Driver]) -> type[Driver]:
    """A subclass of a driver class whose instances set themselves as their OcwatchApp's
    `terminal_driver` when built."""

    def __init__(self: Driver, app: App[Any], **kwargs: Any) -> None:
        base.__init__(self, app, **kwargs)
        if isinstance(app, OcwatchApp):
            app.terminal_driver = self

    return type(base.__name__, (base,), {"__init__": __init__, "__doc__": base.__doc__})
