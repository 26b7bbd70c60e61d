"""The Textual dashboard: a consumer of the View (no state logic of its own).

The root is lazy (PEP 562): importing one module of the app (`tui.app.format`, a screen) does
not load every screen, and `OcwatchApp`, `create_app` and `DashboardOptions` are imported on
first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .app import OcwatchApp, create_app
    from .options import DashboardOptions

__all__ = ["DashboardOptions", "OcwatchApp", "create_app"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from . import app

        return getattr(app, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
