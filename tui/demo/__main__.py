"""`python -m tui.demo`: run the simulated OpenCode server."""

from .server import main

main()
