"""ocwatch: a truthful monitor for OpenCode server sessions."""

from __future__ import annotations


def __getattr__(name: str) -> str:
    """`__version__`, read from the package metadata when first asked for (PEP 562): reading it
    costs about 50 ms, which `status` and `wait` do not pay unless asked for it."""
    if name != "__version__":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = version("ocwatch")  # one source: pyproject.toml
    except PackageNotFoundError:  # run from a source tree that was never installed
        found = "0+unknown"
    globals()["__version__"] = found
    return found
