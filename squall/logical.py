"""Reading the logical plan: task ids, groupings and each component's config."""
from __future__ import annotations

import json
from typing import Mapping, Optional, Sequence

from squall.conf import CLUSTER_LAYER, Config, base_config
from squall.errors import TopologyError
from squall.idl import replace, schema


#: the highest task id a spout may have: at least once, a tree's root carries its spout's task id in its top
#: 16 bits (runtime/acking.py), so packing refuses a spout task above it
MAX_SPOUT_TASK = (1 << 16) - 1


def task_ids(topology: schema.Topology) -> dict:
    """Initial task ids per component, Storm's way: components in name order,
    numbered from 1, contiguous. Packing uses this; scaling appends after the max."""
    ids, next_id = {}, 1
    for component in sorted(topology.components, key=lambda c: c.name):
        ids[component.name] = list(range(next_id, next_id + component.parallelism))
        next_id += component.parallelism
    return ids


def instance_process(task_id: int, component: str, chain: Sequence = ()) -> str:
    """The name of an instance's process in its container (its log file, its container record):
    ``instance-<task>-<component>``; a process running a chain (``chain``: ``(component, task)`` of
    each of its tasks, its own first) names them all, ``instance-3-spout+5-split``."""
    if chain:
        return "instance-" + "+".join(f"{t}-{c}" for c, t in chain)
    return f"instance-{task_id}-{component}"


def process_tasks(name: str) -> list:
    """``[(task, component)]`` an instance process's name says it runs (``[]``: not an instance)."""
    if not name.startswith("instance-"):
        return []
    out = []
    for part in name[len("instance-"):].split("+"):
        task, _, component = part.partition("-")
        if not task.isdigit() or not component:
            return []
        out.append((int(task), component))
    return out


def encode_config(config: Mapping[str, object], where: str) -> dict:
    """Config values as JSON texts (the IDL's map<string, string>)."""
    encoded = {}
    for key, value in config.items():
        try:
            encoded[key] = json.dumps(value)
        except TypeError as e:
            raise TopologyError(f"{where}.{key}: value {value!r} is not a JSON value") from e
    return encoded


def decode_config(encoded: Mapping[str, str]) -> dict:
    """The plan's JSON texts back as config values."""
    return {key: json.loads(value) for key, value in encoded.items()}


def topology_config(topology: schema.Topology, base: Optional[Config] = None) -> Config:
    """Base (defaults, files) < cluster config < topology config < command-line overrides."""
    return _below_components(topology, base).with_layer(decode_config(topology.overrides), "--config-property")


def component_config(topology: schema.Topology, name: str, base: Optional[Config] = None) -> Config:
    """Base < cluster config < topology config < this component's config < command-line overrides."""
    config = _below_components(topology, base)
    component = find_component(topology, name)
    config = config.with_layer(decode_config(component.config), f"components.{name}.config")
    return config.with_layer(decode_config(topology.overrides), "--config-property")


def _below_components(topology: schema.Topology, base: Optional[Config]) -> Config:
    """Base (the site's, read once per process, unless given) < the plan's cluster layer < its own config."""
    config = base if base is not None else base_config()
    config = config.with_layer(decode_config(topology.cluster_config or {}), CLUSTER_LAYER)
    return config.with_layer(decode_config(topology.config), "topology config")


def find_component(topology: schema.Topology, name: str) -> schema.Component:
    for component in topology.components:
        if component.name == name:
            return component
    raise KeyError(f"topology {topology.name!r} has no component {name!r}")


def grouping_name(grouping: int) -> str:
    return schema.GroupingKind._VALUES_TO_NAMES[grouping]


def kind_name(kind: int) -> str:
    return schema.ComponentKind._VALUES_TO_NAMES[kind]


def with_overrides(topology: schema.Topology, overrides: Mapping[str, object]) -> schema.Topology:
    """A copy of the plan with command-line overrides checked and recorded."""
    topology_config(topology).with_layer(overrides, "--config-property")
    return replace(topology, overrides={**topology.overrides, **encode_config(overrides, "--config-property")})
