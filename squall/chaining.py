"""Which components run chained: fused into one process per task, tuples handed on by direct call.

A chain is a path ``head -> ... -> tail`` of components; task *i* of each member
runs in the process of task *i* of the head (its *chain instance*). The edge
``U -> D`` is chained when every rule holds:

- ``D`` is a bolt that takes every input from ``U`` on a stream whose grouping
  sends task *i*'s tuples to task *i*: the same parallelism and ``SHUFFLE``,
  ``LOCAL_OR_SHUFFLE`` or ``NONE``; or both of parallelism 1 and any grouping
  but ``DIRECT`` and ``CUSTOM`` (there is one task to go to);
- at least once, ``D`` acks each tuple when ``process`` returns (``auto_ack``,
  the default): a tuple handed on by call is acked with the one ``U`` is
  processing;
- ``squall.chaining`` (resolved for the component: topology config, its own
  config, ``--config-property``) is ``auto`` for ``D`` (``head`` starts a new
  chain at ``D``, ``off`` keeps ``D`` out of chains) and not ``off`` for ``U``;
- a component is chained to one successor and from one predecessor at most:
  where several qualify, the first by name;
- the topology runs no checkpoints (a stateful component, or EFFECTIVELY_ONCE):
  a checkpoint's markers are aligned per task at its process's connection.

Pure: a function of the logical plan and the configuration, so packing (a chain
instance is one unit), the executor (one process), the runtime and the CLI agree.
"""
from __future__ import annotations

from typing import Iterable, Optional

from squall.conf import Config
from squall.idl import schema
from squall.logical import component_config, topology_config
from squall.stateful import checkpointing

CHAINING_KEY = "squall.chaining"
_FORWARD = {schema.GroupingKind.SHUFFLE, schema.GroupingKind.LOCAL_OR_SHUFFLE, schema.GroupingKind.NONE}
_NOT_WITH_ONE_TASK = {schema.GroupingKind.DIRECT, schema.GroupingKind.CUSTOM}


def _chainable(up: schema.Component, down: schema.Component, reliable: bool) -> bool:
    """Whether ``down`` can take everything from ``up`` by call in task *i*'s process."""
    if down.kind != schema.ComponentKind.BOLT or up.name == down.name:
        return False
    if reliable and down.auto_ack is False:
        return False
    inputs = [i for i in down.inputs if i.component == up.name]  # its other inputs come through the stream manager
    if not inputs:
        return False
    if up.parallelism != down.parallelism:
        return False
    if up.parallelism == 1:
        return all(i.grouping not in _NOT_WITH_ONE_TASK for i in inputs)
    return all(i.grouping in _FORWARD for i in inputs)


def chains(topology: schema.Topology, base: Optional[Config] = None) -> list:
    """The topology's chains of two or more components, each a tuple of component names from head to
    tail, in the order of their heads' names. Components in none run one process per task."""
    config = topology_config(topology, base)
    if checkpointing(topology, config):
        return []  # a checkpoint's markers are aligned per process: one task each (docs/state.md)
    reliable = config["topology.reliability.mode"] == "ATLEAST_ONCE"
    by_name = {c.name: c for c in topology.components}
    mode = {name: component_config(topology, name, base)[CHAINING_KEY] for name in by_name}
    successor: dict = {}
    predecessor: dict = {}
    for down in sorted(by_name):
        if mode[down] != "auto":
            continue
        for up in sorted({i.component for i in by_name[down].inputs}):
            if up in successor or mode[up] == "off" or up not in by_name:
                continue
            if _chainable(by_name[up], by_name[down], reliable):
                successor[up] = down
                predecessor[down] = up
                break
    out = []
    for head in sorted(by_name):
        if head in predecessor or head not in successor:
            continue
        chain = [head]
        while chain[-1] in successor and successor[chain[-1]] not in chain:
            chain.append(successor[chain[-1]])
        out.append(tuple(chain))
    return out


def chain_instances(chain_list: list, instances: Iterable[schema.InstanceId]) -> dict:
    """head task id -> ``[(component, task id), ...]`` (head first) of every chain instance among
    ``instances`` (InstanceIds of a packing plan, or what has them: a chain instance is the tasks of
    one component index). A chain instance missing a member (a plan being changed) is left out."""
    by_index = {(i.component, i.component_index): i.task_id for i in instances}
    out = {}
    for chain in chain_list:
        for (component, index), head in by_index.items():
            if component != chain[0]:
                continue
            members = [(c, by_index.get((c, index))) for c in chain]
            if all(t is not None for _, t in members):
                out[head] = members
    return out
