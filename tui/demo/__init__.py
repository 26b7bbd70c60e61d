"""A built-in simulated OpenCode server (`ocwatch demo`): real HTTP + SSE, standard library only.

`DemoServer` (in `tui.demo.server`) serves a scripted world where every session state is
present and cycles; `build_initial_world()` (in `tui.demo.initial`) is its deterministic start.
"""

from __future__ import annotations

from typing import Any

__all__ = ["DemoServer", "build_initial_world"]


def __getattr__(name: str) -> Any:  # lazy, so `python -m tui.demo.server` imports cleanly
    if name == "DemoServer":
        from .server import DemoServer

        return DemoServer
    if name == "build_initial_world":
        from .initial import build_initial_world

        return build_initial_world
    raise AttributeError(name)
