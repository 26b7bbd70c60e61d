"""The environment ocwatch runs in when a test (or a benchmark) starts it as a user would."""

from __future__ import annotations

import os
import tempfile


def cli_env(password: str | None = None) -> dict[str, str]:
    """This process's environment without the developer's own OpenCode credentials and ocwatch
    settings, with a config folder that holds no config file (and a state folder with no V2
    service file); `password` as $OPENCODE_SERVER_PASSWORD when given."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENCODE_SERVER_", "OCWATCH_"))
        and k not in ("COLUMNS", "LINES")  # (a pytest-xdist worker's 80x24, not the test's)
    }
    env["XDG_CONFIG_HOME"] = os.path.join(tempfile.gettempdir(), "ocwatch-tests-no-config")
    # (and no V2 background service of the developer's: tui.core.service)
    env["XDG_STATE_HOME"] = os.path.join(tempfile.gettempdir(), "ocwatch-tests-no-state")
    # (and no local discovery: this machine's other OpenCode servers are not the test's)
    env["OCWATCH_DISCOVER"] = "none"
    if password is not None:
        env["OPENCODE_SERVER_PASSWORD"] = password
    return env
