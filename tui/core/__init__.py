"""The headless core: wire models, client, event stream, snapshot, journal, derive, view.

Nothing in this package imports Textual (a test enforces it).
"""
