"""The ``cluster`` and ``zk_cluster`` fixtures (see e2e_harness.py)."""
from e2e_harness import cluster, zk_cluster  # noqa: F401
