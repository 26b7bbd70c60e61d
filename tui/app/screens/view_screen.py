"""A screen that shows the app's latest View."""

from __future__ import annotations

from textual import events
from textual.screen import Screen
from textual.widgets import Footer

from tui.core.view import View

from ..dashboard import Dashboard


class ViewScreen(Screen[None]):
    """Shows the dashboard's latest View with `show_view()`: once `follow_view()` is called
    (from `on_mount`), on every new View, and whenever the screen comes back to the top. It
    reads the `Dashboard` it is built with, never the App."""

    def __init__(self, dashboard: Dashboard) -> None:
        super().__init__()
        self.dashboard = dashboard

    def follow_view(self) -> None:
        """Show the current View now and each new one as it comes (at once, in the pull that
        publishes it: posted, it would wait behind the screen's queued messages, which under a
        stream are many)."""
        self.dashboard.view_changed.subscribe(self, self._on_view, immediate=True)
        self.show_view()

    COMPACT_FOOTER_BELOW = 100
    """Columns under which the footer packs its keys closer (Quit and Help still fit at 80)."""

    def on_screen_resume(self) -> None:
        self.show_view()

    def on_resize(self, event: events.Resize) -> None:
        compact = event.size.width < self.COMPACT_FOOTER_BELOW
        for footer in self.query(Footer):
            if footer.compact != compact:  # (setting it restyles the footer's every key)
                footer.compact = compact

    def _on_view(self, _view: View) -> None:
        self.show_view()

    def show_view(self) -> None:
        """Display the app's latest View."""
        raise NotImplementedError
