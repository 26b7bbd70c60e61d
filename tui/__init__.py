"""ocwatch: a truthful monitor for OpenCode server sessions."""

from __future__ import annotations

import sys
from types import ModuleType

# httpx imports its command-line tool at import time (and with it Rich's console, click and
# pygments) whenever those are installed, as they are beside Textual; ocwatch never runs it, and
# the headless commands (status, wait, watch, metrics) should not load a terminal renderer for
# nothing. An empty module in its place makes httpx take its own fallback (`main` then says to
# install httpx[cli]). Set before anything here imports httpx; tests/unit/test_httpx_stub.py
# fails if httpx stops loading its tool (the stub is then dead) or loads it under another name.
if "httpx" not in sys.modules:
    sys.modules.setdefault("httpx._main", ModuleType("httpx._main"))


def __getattr__(name: str) -> str:
    """`__version__`, read from the package metadata when first asked for (PEP 562): reading
    the metadata loads importlib.metadata and walks the installed distributions, which `status`
    and `wait` have no use for unless asked for the version."""
    if name != "__version__":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = version("ocwatch")  # one source: pyproject.toml
    except PackageNotFoundError:  # run from a source tree that was never installed
        found = "0+unknown"
    globals()["__version__"] = found
    return found
