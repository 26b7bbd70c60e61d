"""Recordings: what the monitors saw, written (`writer`) and replayed exactly (`replay`)."""
