"""Unit-test fixtures: the developer's own config and password never reach a test."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    for name in (
        "OCWATCH_CONFIG",
        "OCWATCH_SERVERS",
        "OCWATCH_SERVERS_FILE",
        "OCWATCH_THEME",
        "OCWATCH_GRACE",
        "OCWATCH_RESYNC",
        "OCWATCH_COMMAND_DEADLINE",
        "OPENCODE_SERVER_PASSWORD",
        "OPENCODE_SERVER_PASSWORD_FILE",
        "OPENCODE_SERVER_USERNAME",
        "OPENCODE_SERVER_URL",
    ):
        monkeypatch.delenv(name, raising=False)
