"""Dashboard test fixtures: no developer config, a fixed time zone, a fixed clock."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tui.app import DashboardOptions, OcwatchApp, create_app
from tui.core.source import StaticSource
from tui.core.view import View

from . import views


@pytest.fixture(autouse=True)
def steady_cursor(monkeypatch: pytest.MonkeyPatch) -> None:
    """A focused text box's cursor does not blink: a snapshot taken more than half a second
    after the last key (a loaded CI machine) would otherwise catch it hidden."""
    from textual.widgets import Input

    monkeypatch.setattr(Input, "_toggle_cursor", lambda self: None)


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Keep the developer's own config, themes, password and time zone out of the tests."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    for name in (
        "OCWATCH_CONFIG",
        "OCWATCH_SERVERS",
        "OCWATCH_THEME",
        "OCWATCH_GRACE",
        "OCWATCH_RESYNC",
        "OPENCODE_SERVER_PASSWORD",
        "OPENCODE_SERVER_PASSWORD_FILE",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENCODE_SERVER_URL", views.A)
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def make_app(view: View | None = None, **kwargs: object) -> tuple[OcwatchApp, StaticSource]:
    """The app on a StaticSource with the test clock; `kwargs` are DashboardOptions fields."""
    source = StaticSource(view if view is not None else views.every_state(), views.history())
    kwargs.setdefault("server_urls", [views.A, views.B])
    app = create_app(source, DashboardOptions(clock=views.clock, **kwargs))  # type: ignore[arg-type]
    return app, source
