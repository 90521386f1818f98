"""The e2e harness's ``cluster`` fixture, for the fault tests."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "e2e"))

from e2e_harness import cluster, zk_cluster  # noqa: E402,F401
