"""Where ocwatch reads and writes the user's files: the XDG folders, on every platform.

`$XDG_CONFIG_HOME/ocwatch` (default `~/.config/ocwatch`): the config file and user themes.
`$XDG_STATE_HOME/ocwatch` (default `~/.local/state/ocwatch`): what it writes for the user
(recordings, screenshots). A relative `$XDG_*` value is ignored, as the XDG spec says. The XDG
layout is used on macOS too (not `~/Library`), as documented since the first release.
"""

from __future__ import annotations

from pathlib import Path

from platformdirs.unix import Unix

APP = "ocwatch"


def config_dir() -> Path:
    """`$XDG_CONFIG_HOME/ocwatch`, default `~/.config/ocwatch`."""
    return Unix(APP).user_config_path


def config_file() -> Path:
    """The config file where `$OCWATCH_CONFIG` does not name one."""
    return config_dir() / "config.toml"


def theme_dir() -> Path:
    """Where user themes live: `$XDG_CONFIG_HOME/ocwatch/themes`."""
    return config_dir() / "themes"


def state_dir() -> Path:
    """Where ocwatch keeps what it writes for the user (recordings, screenshots):
    `$XDG_STATE_HOME/ocwatch`, default `~/.local/state/ocwatch`."""
    return Unix(APP).user_state_path
