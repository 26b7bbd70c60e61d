"""ocwatch: a truthful monitor for OpenCode server sessions."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("ocwatch")  # one source: pyproject.toml
except PackageNotFoundError:  # run from a source tree that was never installed
    __version__ = "0+unknown"
