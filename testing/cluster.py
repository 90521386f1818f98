"""``LocalCluster``: the embedded local cluster as a context manager, for tests of a user's topology.

Storm's ``LocalCluster``: real executors, stream managers and one process per task on this machine, with
its own ``SQUALL_HOME`` (a temporary folder unless given) and local state (or the ZooKeeper a cluster file
names). Leaving the block kills every topology it submitted and removes the folder it made.
"""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
from typing import Any, Mapping, Optional

from squall.conf import base_config
from squall.logical import with_overrides
from squall.scheduler import launcher, manager
from squall.state import make_state_manager


class LocalCluster:
    """``with LocalCluster() as cluster: cluster.submit(topology)``: the topology runs until killed."""

    def __init__(self, home: Optional[str] = None, config_path: Optional[str] = None):
        self._own_home = home is None
        self.home = os.path.abspath(home) if home else ""
        self.config_path = config_path
        self.state: Any = None
        self.submitted: list = []
        self._saved_env: dict = {}

    # life --------------------------------------------------------------------------------
    def start(self) -> "LocalCluster":
        if self._own_home:
            self.home = tempfile.mkdtemp(prefix="squall-local-")
        self._set_env("SQUALL_HOME", self.home)
        self.base = base_config(self.config_path)
        self.state = make_state_manager(self.base)
        self.state.start()
        return self

    def close(self) -> None:
        """Kill what is still running, stop the state manager, remove the folder made for the cluster."""
        try:
            for name in list(self.submitted):
                self.kill(name, missing_ok=True)
        finally:
            if self.state is not None:
                self.state.close()
                self.state = None
            for key, value in self._saved_env.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
            self._saved_env = {}
            if self._own_home and self.home:
                shutil.rmtree(self.home, ignore_errors=True)

    def __enter__(self) -> "LocalCluster":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _set_env(self, key: str, value: str) -> None:
        self._saved_env.setdefault(key, os.environ.get(key))
        os.environ[key] = value

    # topologies ------------------------------------------------------------------------------
    def submit(self, topology: Any, config: Optional[Mapping[str, Any]] = None) -> str:
        """Launch ``topology`` (a built ``Topology``, its logical plan, or a streamlet ``Builder``) with
        ``config`` over its own (as ``--config-property``), and wait until every instance runs. Returns
        its name."""
        plan = _plan_of(topology)
        if config:
            plan = with_overrides(plan, dict(config))
        self._import_roots(plan)
        launcher.submit(plan, self.state, self.base, cluster="local")
        self.submitted.append(plan.name)
        return plan.name

    def kill(self, name: str, missing_ok: bool = False) -> None:
        """Stop every process of ``name`` (its logs and metrics stay in its run folder)."""
        try:
            manager.kill(self.state, name)
        except manager.NotRunning:
            if not missing_ok:
                raise
        if name in self.submitted:
            self.submitted.remove(name)

    def run_dir(self, name: str) -> str:
        """The folder of the topology's run: ``logs/``, ``metrics/``, ``checkpoints/``."""
        return manager.running(self.state, name).run_dir

    def show(self, name: str) -> dict:
        """``squall show --json``'s data."""
        from squall.scheduler.cli import show_data

        return show_data(self.state, name)

    def metrics(self, name: str) -> dict:
        """``squall metrics --json``'s data, from the topology master."""
        from squall.runtime.client import query_metrics

        return query_metrics(self.state, name)

    def _import_roots(self, plan: Any) -> None:
        """Every process imports the topology's classes by name: the folders their modules were imported
        from go on ``PYTHONPATH`` (a test module's folder is on ``sys.path`` only in the test's process)."""
        roots = []
        for c in plan.components:
            module = sys.modules.get(c.class_name.partition(":")[0])
            path = getattr(module, "__file__", None)
            if not path:
                continue
            root = os.path.dirname(os.path.abspath(path))
            for _ in range(module.__name__.count(".")):
                root = os.path.dirname(root)
            if root not in roots:
                roots.append(root)
        known = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        added = [r for r in roots if r not in known]
        if added:
            self._set_env("PYTHONPATH", os.pathsep.join(added + known))


def _plan_of(topology: Any) -> Any:
    from squall.streamlet import Builder
    from squall.topology import Topology

    if isinstance(topology, Builder):
        topology = topology.build()
    return topology.plan if isinstance(topology, Topology) else topology
