"""``make_instance``: the instance of a task, of its role's class."""
from __future__ import annotations

from typing import Mapping, Optional

from squall.component import Component
from squall.conf import Config
from squall.idl import schema
from squall.runtime.instance.bolt import BoltInstance
from squall.runtime.instance.reliable import ReliableBoltInstance
from squall.runtime.instance.spout import SpoutInstance
from squall.runtime.instance.state import InstanceState


def make_instance(topology: schema.Topology, component_name: str, task_id: int, container: int,
                  config: Optional[Config] = None, batch_size: int = 1000, component_obj: Optional[Component] = None,
                  chained: Optional[Mapping[str, int]] = None, fast_path: bool = True) -> InstanceState:
    """Task ``task_id`` of ``component_name`` in ``container``: a spout, a bolt at most once, or a bolt
    at least once (``topology.reliability.mode``). ``config`` defaults to the topology's. ``chained``:
    the next member of its chain, ``{component: task}`` (``chain.py``). ``fast_path`` off: the
    component emits, acks and fails through the generic collector methods only (tests compare both)."""
    from squall.logical import find_component, topology_config

    config = config or topology_config(topology)
    if find_component(topology, component_name).kind == schema.ComponentKind.SPOUT:
        cls: type[InstanceState] = SpoutInstance
    elif config["topology.reliability.mode"] == "ATLEAST_ONCE":
        cls = ReliableBoltInstance
    else:
        cls = BoltInstance
    return cls(topology, component_name, task_id, container, config, batch_size, component_obj, chained, fast_path)
