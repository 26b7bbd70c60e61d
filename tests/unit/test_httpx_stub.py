"""tui/__init__.py puts an empty module in place of httpx's command-line tool (`httpx._main`):
httpx imports that tool whenever it is imported, and with it click, pygments and Rich's console,
which no ocwatch command uses. The stub is pinned to what httpx does: if httpx stops loading its
tool at import (the stub would be dead code: remove it) or loads it under another name (the stub
would no longer stub it), a test here says so."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.cli_env import cli_env

#: What a fresh interpreter loaded: the modules a terminal tool brings, and httpx's `main`
LOADED = """
import inspect, json, sys
{first}
import httpx
print(json.dumps({{
    "tool": sorted(m for m in ("click", "pygments", "rich.console") if m in sys.modules),
    "stub": type(sys.modules["httpx._main"]).__name__ if "httpx._main" in sys.modules else None,
    "stub_empty": not [
        a for a in vars(sys.modules.get("httpx._main", sys)) if not a.startswith("__")
    ],
    "main": type(httpx.main).__name__,
    "main_says": inspect.getsource(httpx.main) if inspect.isfunction(httpx.main) else "",
}}))
"""


def loaded(first: str) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", LOADED.format(first=first)],
        capture_output=True,
        text=True,
        env=cli_env(),
        timeout=60,
        check=True,
    )
    return json.loads(proc.stdout)


def test_httpx_alone_still_loads_its_command_line_tool() -> None:
    """Without the stub, importing httpx loads `httpx._main` and the tool's libraries: what the
    stub saves. If this fails, httpx changed: remove the stub, or stub the tool's new name."""
    got = loaded(first="")
    assert got["tool"] == ["click", "pygments", "rich.console"], got
    assert got["stub"] == "module" and not got["stub_empty"]  # the real tool
    assert got["main"] != "function"  # its command, not the fallback


def test_after_tui_httpx_takes_its_own_fallback_and_no_tool_is_loaded() -> None:
    got = loaded(first="import tui")
    assert got["tool"] == [], got
    assert got["stub"] == "module" and got["stub_empty"]  # the empty stand-in
    # httpx's own fallback: `main` says to install httpx[cli]
    assert got["main"] == "function" and "httpx[cli]" in got["main_says"], got
