"""What every runtime process does first: parse its few flags, read its
topology's state, resolve its configuration, set up logging.

The flags (``squall.processargs.ProcessArgs``): every process gets its
executor's (``--topology --container --state``) plus ``--role`` and, for an
instance, ``--task``; ports of its container's daemons come from a small
launch file the executor writes (``--launch``).
"""
from __future__ import annotations

import json
import logging
import os
import socket
import sys
from dataclasses import dataclass
from typing import Any, Optional

from squall.errors import SquallError
from squall.processargs import ProcessArgs

log = logging.getLogger(__name__)


class RuntimeStartError(SquallError):
    """A runtime process cannot start: its state is missing or inconsistent."""


def setup_logging(role: str, container: int, task: Optional[int] = None) -> None:
    who = f"{role}-{task}" if task is not None else role
    logging.basicConfig(
        level=logging.INFO,
        stream=sys.stderr,
        format=f"%(asctime)s %(levelname)s [c{container} {who} %(process)d] %(name)s: %(message)s",
        force=True,  # an executor that claimed its container id names it from then on
    )


@dataclass
class RuntimeEnv:
    """One validated view of everything a process needs from the state manager."""

    args: ProcessArgs
    state: Any  # StateManager (started)
    execution: Any  # ExecutionState
    topology: Any  # Topology
    packing: Any  # PackingPlan
    config: Any  # squall.conf.Config, topology level
    launch: dict

    @property
    def name(self) -> str:
        return self.args.topology

    @property
    def secret(self) -> str:
        return self.execution.secret

    @property
    def run_dir(self) -> str:
        return self.execution.run_dir

    @property
    def log_dir(self) -> str:
        """Where this container's processes log: ``--log-dir``, else ``<run_dir>/logs/container-<id>``."""
        return self.args.log_dir or os.path.join(self.run_dir, "logs", f"container-{self.args.container}")

    @property
    def debug_dir(self) -> str:
        """Where this container keeps its stacks and profiles: ``<--log-dir>/debug`` (on YARN, served by its
        debug server), else ``<run_dir>/debug/container-<id>``."""
        if self.args.log_dir:
            return os.path.join(self.args.log_dir, "debug")
        return os.path.join(self.run_dir, "debug", f"container-{self.args.container}")

    @property
    def metrics_dir(self) -> str:
        """Where this container's metrics manager writes: ``--log-dir``, else ``<run_dir>/metrics``."""
        return self.args.log_dir or os.path.join(self.run_dir, "metrics")

    @property
    def bind_host(self) -> str:
        return self.config["squall.runtime.bind.host"]

    @property
    def advertised_host(self) -> str:
        host = self.bind_host
        if host in ("", "0.0.0.0"):
            return socket.gethostname()
        return host

    @property
    def max_frame(self) -> int:
        return int(self.config["squall.runtime.frame.max.mb"]) * 1024 * 1024

    def container_plan(self, packing: Any = None) -> Any:
        packing = packing or self.packing
        for c in packing.containers:
            if c.id == self.args.container:
                return c
        return None

    def checkpoint_storage(self) -> Any:
        """Where checkpoints' state is written (``squall.state.storage``; ``state/storage.py``)."""
        from squall.state.storage import open_storage

        return open_storage(self.config["squall.state.storage"], self.run_dir)

    def close(self) -> None:
        self.state.close()


def load_env(args: ProcessArgs) -> RuntimeEnv:
    from squall.logical import topology_config
    from squall.state import Kind, StateAddress, StateError

    try:
        address = StateAddress.read(args.state)
        state = address.open()
        state.start()
    except StateError as e:
        raise RuntimeStartError(f"topology {args.topology!r}: {e}") from e
    name = args.topology
    execution = state.get(Kind.EXECUTION_STATE, name)
    topology = state.get(Kind.TOPOLOGY, name)
    packing = state.get(Kind.PACKING_PLAN, name)
    missing = [k.value for k, v in ((Kind.EXECUTION_STATE, execution), (Kind.TOPOLOGY, topology),
                                    (Kind.PACKING_PLAN, packing)) if v is None]
    if missing:
        state.close()
        raise RuntimeStartError(
            f"topology {name!r}: no {', '.join(missing)} record in the state manager "
            f"({address.describe()}); was it submitted, or already killed?")
    if topology.source_file:
        directory = os.path.dirname(topology.source_file)
        if directory not in sys.path:
            sys.path.insert(0, directory)
    config = topology_config(topology)
    launch: dict = {}
    if args.launch:
        with open(args.launch) as f:
            launch = json.load(f)
    return RuntimeEnv(args, state, execution, topology, packing, config, launch)
