"""The Textual dashboard: a consumer of the View (no state logic of its own)."""

from .app import OcwatchApp, create_app

__all__ = ["OcwatchApp", "create_app"]
