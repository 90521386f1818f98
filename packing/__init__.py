"""Packing: placing a topology's tasks into containers (pure functions, no I/O)."""
