"""The ocwatch Textual app: a consumer of Views, built by `create_app()` for the CLI and tests.

One long-lived worker runs the `ViewSource`; its `notify` callback only sets a dirty flag. A 10 Hz
timer pulls `source.current(now)` when the flag is set (so a flood of changes becomes one redraw),
and at least once a second so times count up and grace periods expire on screen.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from textual import work
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.screen import Screen
from textual.signal import Signal

from tui.core.settings import default_server_urls
from tui.core.source import ViewSource
from tui.core.view import View

from . import format as fmt
from .screens.detail import DetailScreen
from .screens.help import DETAIL_EXTRA, NAVIGATION, HelpScreen, binding_rows
from .screens.main import MainScreen
from .themes import DEFAULT_THEME, load_themes
from .widgets.cells import COLUMNS
from .widgets.session_table import SessionTable

Key = tuple[str, str]
PULL_INTERVAL = 0.1
"""Seconds between checks of the dirty flag (at most 10 redraws a second)."""
TICK_INTERVAL = 1.0
"""Seconds between pulls even without a change (time in state counts up)."""


class OcwatchApp(App[None]):
    """The dashboard. Holds no state logic: it shows the Views its source derives."""

    CSS_PATH = "ocwatch.tcss"
    TITLE = "ocwatch"
    BINDINGS = [
        Binding("q", "quit", "Quit"),
        Binding("question_mark", "help", "Help"),
        Binding("t", "next_theme", "Next theme", show=False),
    ]

    def __init__(
        self,
        source: ViewSource,
        *,
        theme: str | None = None,
        server_urls: Sequence[str] = (),
        clock: Callable[[], float] = time.time,
        user_theme_dir: Path | None = None,
    ) -> None:
        super().__init__()
        self.source = source
        self.clock = clock
        self.server_urls = list(server_urls)
        self.view: View | None = None
        self.now = clock()
        self.view_changed: Signal[View] = Signal(self, "view-changed")
        self._dirty = True
        self._pulled_at = -math.inf
        self._source_failures = 0
        self.startup_message: str | None = None
        """Shown once as a notification when the app starts (e.g. what the demo is)."""
        loaded = load_themes(user_theme_dir)
        self.theme_warnings = list(loaded.warnings)
        self.ocwatch_themes: list[str] = []
        for t in loaded.themes:
            self.register_theme(t)
            if t.name not in self.ocwatch_themes:
                self.ocwatch_themes.append(t.name)
        name = theme or DEFAULT_THEME
        if name not in self.available_themes:
            self.theme_warnings.append(
                f"Unknown theme {name!r}; using {DEFAULT_THEME}. "
                f"Available: {', '.join(self.ocwatch_themes)}")
            name = DEFAULT_THEME
        self.theme = name
        self.main_screen = MainScreen()

    # -- Textual hooks ------------------------------------------------------------------------

    def get_default_screen(self) -> Screen[None]:
        return self.main_screen

    def get_theme_variable_defaults(self) -> dict[str, str]:
        """State colours for themes that do not define them (e.g. Textual's own themes)."""
        colors = self.current_theme.to_color_system().generate()
        return {
            "state-busy": colors["primary"],
            "state-retry": colors["warning"],
            "state-input": colors["accent"],
            "state-idle": colors["success"],
            "state-error": colors["error"],
            "state-unknown": colors["foreground-muted"],
            "state-stale": colors["secondary"],
        }

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        for state in fmt.STATE_FILTERS:
            title = "Show all states" if state == "all" else f"Show only {state} sessions"
            yield SystemCommand(title, f"Filter the session table by state ({state})",
                                partial(self._state_filter, state))
        for name in self.ocwatch_themes:
            yield SystemCommand(f"Theme: {name}", f"Switch to the {name} theme",
                                partial(setattr, self, "theme", name))
        for spec in COLUMNS:
            yield SystemCommand(f"Sort by {spec.label}", f"Sort the session table by {spec.label}",
                                partial(self._sort, spec.key))
        yield SystemCommand("Expand all", "Show every sub-agent",
                            partial(self.main_screen.action_fold_all, False))
        yield SystemCommand("Collapse all", "Fold every parent",
                            partial(self.main_screen.action_fold_all, True))
        yield SystemCommand("Help", "Every key and what each state glyph means", self.action_help)

    def on_mount(self) -> None:
        if self.startup_message:
            self.notify(self.startup_message, timeout=10, markup=False)
        for warning in self.theme_warnings:
            self.notify(warning, title="Themes", severity="warning", timeout=15, markup=False)
        self.pull()
        self.set_interval(PULL_INTERVAL, self._tick)
        self._run_source()

    # -- the View ------------------------------------------------------------------------------

    def mark_dirty(self) -> None:
        """The source's `notify`: cheap, may be called at any rate; changes are coalesced.

        The first change after a quiet spell is pulled at once; changes that follow within
        PULL_INTERVAL wait for the timer, so a flood becomes at most ten redraws a second."""
        if self._dirty:
            return
        self._dirty = True
        if time.monotonic() - self._pulled_at >= PULL_INTERVAL:
            self.call_next(self._tick)

    def _tick(self) -> None:
        if self._dirty or time.monotonic() - self._pulled_at >= TICK_INTERVAL:
            self.pull()

    def pull(self) -> None:
        """Read the source's current View and show it."""
        self._dirty = False
        self._pulled_at = time.monotonic()
        now = self.clock()
        try:
            view = self.source.current(now)
        except Exception as error:  # a source bug must not take the dashboard down
            self.log.error(f"ViewSource.current failed: {error!r}")
            return
        self.view, self.now = view, now
        self.view_changed.publish(view)

    @work(exclusive=True, exit_on_error=False, group="source")
    async def _run_source(self) -> None:
        """Run the source until the app exits; restart it (with backoff) if it fails."""
        delay = 1.0
        while True:
            try:
                await self.source.run(self.mark_dirty)
                return
            except Exception as error:
                self._source_failures += 1
                self.notify(f"The view source stopped ({fmt.literal(str(error))}); "
                            f"restarting in {delay:.0f}s", severity="error", markup=False)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 30.0)

    # -- navigation ---------------------------------------------------------------------------

    def open_details(self, key: Key) -> None:
        """Open the detail view of a session."""
        screen = self.screen
        if isinstance(screen, DetailScreen) and screen.key == key:
            return
        self.push_screen(DetailScreen(key))

    def _state_filter(self, state: str) -> None:
        while isinstance(self.screen, DetailScreen | HelpScreen):
            self.pop_screen()
        self.main_screen.action_state_filter(state)

    def _sort(self, column: str) -> None:
        self.main_screen.table.set_sort(column, reverse=False)

    def help_groups(self) -> list[tuple[str, list[tuple[str, str]]]]:
        """Every key, grouped by where it works (read from the bindings)."""
        palette = [(self.COMMAND_PALETTE_BINDING, "Command palette (filters, themes, sort, …)")]
        return [
            ("Sessions", binding_rows(SessionTable.BINDINGS) + binding_rows(MainScreen.BINDINGS)),
            ("Details", binding_rows(DetailScreen.BINDINGS) + list(DETAIL_EXTRA)),
            ("Everywhere", binding_rows(self.BINDINGS) + palette),
            ("Table and mouse", list(NAVIGATION)),
            ("This help", binding_rows(HelpScreen.BINDINGS)),
        ]

    def action_help(self) -> None:
        """Show every key."""
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(self.help_groups()))

    def action_next_theme(self) -> None:
        """Switch to the next ocwatch theme."""
        names = self.ocwatch_themes
        i = names.index(self.theme) if self.theme in names else -1
        self.theme = names[(i + 1) % len(names)]
        self.notify(f"Theme: {self.theme}", timeout=2)


def create_app(
    source: ViewSource,
    *,
    theme: str | None = None,
    server_urls: Sequence[str] | None = None,
    clock: Callable[[], float] = time.time,
    user_theme_dir: Path | None = None,
) -> OcwatchApp:
    """Build the dashboard on a ViewSource (the CLI's Fleet, or a StaticSource in tests).

    `theme`: a theme name (default `ocwatch-dark`; an unknown name warns and falls back).
    `server_urls`: the configured servers, shown while the first View has none
    (default: `$OPENCODE_SERVER_URL` or http://127.0.0.1:4096).
    `clock`: the wall clock (epoch seconds), injectable so tests are deterministic.
    `user_theme_dir`: where user themes live (default `$XDG_CONFIG_HOME/ocwatch/themes`).
    """
    urls = list(server_urls) if server_urls is not None else default_server_urls()
    return OcwatchApp(source, theme=theme, server_urls=urls, clock=clock,
                      user_theme_dir=user_theme_dir)
