"""The e2e harness's ``cluster`` fixture, for the fault tests."""
from e2e_harness import cluster, zk_cluster  # noqa: F401
