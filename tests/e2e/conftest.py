"""The ``cluster`` fixture (see e2e_harness.py)."""
from e2e_harness import cluster  # noqa: F401
