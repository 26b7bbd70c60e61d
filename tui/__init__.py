"""ocwatch: a truthful monitor for OpenCode server sessions."""

__version__ = "0.1.0"
