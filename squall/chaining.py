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
  a checkpoint's markers are aligned per task at its process's connection;
- a chain never costs: a path the rules above allow is cut into its longest
  prefix runs whose summed request (``squall.component.cpu|ram.mb|disk.mb``)
  stays within one core of cpu (a Python process runs on one core at a time:
  the GIL) and fits a container beside its stream and metrics managers, as
  packing counts them. Members whose requests add up to more than a core
  pipeline, one process per task, and may use a core each; members that ask
  for a core or less together fuse, and save the serialisation and the hop.

Pure: a function of the logical plan and the configuration, so packing (a chain
instance is one unit), the executor (one process), the runtime and the CLI agree.
``chain_plan`` also says, for every edge, why it is not chained.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping, Optional

from squall.conf import Config
from squall.idl import schema
from squall.logical import component_config, grouping_name, topology_config
from squall.resources import CAP_KEYS, COMPONENT_KEYS, DIMS, MILLI, Padding, Res, config_res
from squall.stateful import checkpointing

CHAINING_KEY = "squall.chaining"
ONE_CORE = MILLI  # millicores: what one Python process can use
_FORWARD = {schema.GroupingKind.SHUFFLE, schema.GroupingKind.LOCAL_OR_SHUFFLE, schema.GroupingKind.NONE}
_NOT_WITH_ONE_TASK = {schema.GroupingKind.DIRECT, schema.GroupingKind.CUSTOM}


@dataclass(frozen=True)
class Edge:
    """``up -> down`` (``down`` reads a stream of ``up``); ``reason`` says why it is not chained,
    empty when it is."""

    up: str
    down: str
    reason: str = ""

    @property
    def chained(self) -> bool:
        return not self.reason

    def to_json(self) -> dict:
        """What ``squall pack --json`` and the UI's packing page give for the edge."""
        return {"from": self.up, "to": self.down, "chained": self.chained, "reason": self.reason}


@dataclass(frozen=True)
class ChainPlan:
    """The chains of two or more components (head to tail, in the order of their heads' names) and
    every edge between two components (by upstream, then downstream name) with its reason."""

    chains: tuple[tuple[str, ...], ...]
    edges: tuple[Edge, ...]


def chains(topology: schema.Topology, base: Optional[Config] = None,
           granularity: Optional[str] = None) -> list[tuple[str, ...]]:
    """The topology's chains of two or more components, each a tuple of component names from head to
    tail, in the order of their heads' names. Components in none run one process per task."""
    return list(chain_plan(topology, base, granularity).chains)


def chain_plan(topology: schema.Topology, base: Optional[Config] = None,
               granularity: Optional[str] = None) -> ChainPlan:
    """Chains and every edge's reason (module docstring: the rules, in the order they are asked).
    ``granularity``: the packing granularity whose container a chain must fit (``task``: the
    ``squall.container.max.*`` cap, ``worker``: the worker size); ``squall.packing.granularity`` unless
    a packing is asked for another (``squall pack --granularity``, ``--compare``)."""
    config = topology_config(topology, base)
    by_name = {c.name: c for c in topology.components}
    pairs = [(up, down) for down in sorted(by_name) for up in sorted({i.component for i in by_name[down].inputs})
             if up != down and up in by_name]
    if checkpointing(topology, config):  # a checkpoint's markers are aligned per process (docs/state.md)
        return ChainPlan((), tuple(Edge(up, down, "checkpointing") for up, down in sorted(pairs)))
    reliable = config["topology.reliability.mode"] == "ATLEAST_ONCE"
    configs = {name: component_config(topology, name, base) for name in by_name}
    mode = {name: cc[CHAINING_KEY] for name, cc in configs.items()}
    why: dict[tuple[str, str], str] = {}
    successor: dict[str, str] = {}
    predecessor: dict[str, str] = {}
    for up, down in pairs:
        reason = _refusal(by_name[up], by_name[down], mode, reliable)
        if not reason and up in successor:
            reason = f"{up!r} is chained to {successor[up]!r}"
        if not reason and down in predecessor:
            reason = f"{down!r} is chained from {predecessor[down]!r}"
        if reason:
            why[up, down] = reason
        else:
            successor[up], predecessor[down] = down, up
    sizes = {name: config_res(cc, COMPONENT_KEYS) for name, cc in configs.items()}
    cap_keys = CAP_KEYS[granularity or config["squall.packing.granularity"]]
    cap = config_res(config, cap_keys)
    padding = Padding.of_config(config)
    out: list[tuple[str, ...]] = []
    for head in sorted(by_name):
        if head in predecessor or head not in successor:
            continue
        path = [head]
        while path[-1] in successor and successor[path[-1]] not in path:
            path.append(successor[path[-1]])
        for run, cut, reason in _runs(path, sizes, padding, cap, cap_keys):
            if len(run) > 1:
                out.append(tuple(run))
            if cut is not None:
                why[cut] = reason
    chained = {(a, b) for chain in out for a, b in zip(chain, chain[1:])}
    edges = tuple(Edge(up, down, "" if (up, down) in chained else why.get((up, down), "a cycle"))
                  for up, down in sorted(pairs))
    return ChainPlan(tuple(sorted(out)), edges)


def _refusal(up: schema.Component, down: schema.Component, mode: Mapping[str, str], reliable: bool) -> str:
    """Why ``down`` cannot take everything from ``up`` by call in task *i*'s process ("" if it can)."""
    if mode[down.name] == "off" or mode[up.name] == "off":
        return "squall.chaining: off"
    if mode[down.name] == "head":
        return f"squall.chaining: head ({down.name!r} starts a chain)"
    if reliable and down.auto_ack is False:
        return f"at least once, {down.name!r} acks its tuples itself (auto_ack off)"
    if up.parallelism != down.parallelism:
        return f"different parallelism ({up.parallelism} and {down.parallelism})"
    for i in down.inputs:  # its other inputs come through the stream manager
        if i.component != up.name:
            continue
        if i.grouping in _NOT_WITH_ONE_TASK or (up.parallelism > 1 and i.grouping not in _FORWARD):
            return f"{grouping_name(i.grouping).lower().replace('_', '-')} grouping"
    return ""


def _runs(path: list[str], sizes: Mapping[str, Res], padding: Padding, cap: Res,
          cap_keys: tuple[str, str, str]) -> list[tuple[list[str], Optional[tuple[str, str]], str]]:
    """``path`` cut into its longest prefix runs within one core that fit a container:
    ``[(run, cut edge or None, reason)]``, the cut edge the one after the run."""
    out = []
    run = [path[0]]
    for member in path[1:]:
        reason = _over(run + [member], sizes, padding, cap, cap_keys)
        if reason:
            out.append((run, (run[-1], member), reason))
            run = [member]
        else:
            run.append(member)
    out.append((run, None, ""))
    return out


def _over(run: list[str], sizes: Mapping[str, Res], padding: Padding, cap: Res, cap_keys: tuple[str, str, str]) -> str:
    """Why ``run`` cannot be one process ("" if it can)."""
    total = Res()
    for member in run:
        total = total + sizes[member]
    if total.cpu > ONE_CORE:
        return f"cpu {'+'.join(f'{sizes[m].cpu / MILLI:g}' for m in run)} > 1 core"
    for dim in total.over(padding.room(cap)):
        return (f"would not fit a container: {total.describe(dim)} + {_amount(padding.of(total), dim)} for the "
                f"stream and metrics managers > {cap_keys[DIMS.index(dim)]}={_amount(cap, dim)}")
    return ""


def _amount(res: Res, dim: str) -> str:
    """``res``'s ``dim`` as a message shows it: ``0.35`` (cores), ``224 MB``."""
    return res.describe(dim).split(" ", 1)[1]


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
