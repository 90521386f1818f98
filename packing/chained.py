"""Chains in packing: a chain instance is placed as one unit.

A chain (``squall/chaining.py``) runs task *i* of each of its components in one
process, so packing places the tasks of index *i* together: the algorithms see
one component per chain, ``head+next+...``, whose instance is the sum of its
members' sizes (a chain fits a container by construction: ``squall/chaining.py``
cuts one that would not), and the plan they make is *expanded* into the members'
instances, each with its own size and task id, in the container the unit went
to. The request the plans are built and checked with is the real one. A
``topology.workers`` above the number of units (but not of tasks) gives one
container per unit: containers of tasks that now run together would be empty.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable, Mapping, Optional

from squall.idl import schema

from squall.packing.errors import PackingError
from squall.packing.request import ComponentNeed, Request
from squall.resources import Res


def unit_name(chain: tuple) -> str:
    """The component the algorithms see for ``chain``."""
    return "+".join(chain)


@dataclass(frozen=True)
class Fused:
    """A request with each chain as one component (``request``), and the chains by unit name."""

    request: Request
    chains: Mapping[str, tuple] = field(default_factory=dict)

    def chain(self, component: str) -> Optional[tuple]:
        return self.chains.get(component)


def fuse(request: Request, chain_list: list) -> Fused:
    """``request`` with every chain of ``chain_list`` as one component of summed size."""
    if not chain_list:
        return Fused(request)
    by_name = {c.name: c for c in request.components}
    unit_of = {member: unit_name(chain) for chain in chain_list for member in chain}

    def upstream(names: tuple) -> tuple:
        return tuple(sorted({unit_of.get(n, n) for n in names}))

    components = [replace(c, upstream=upstream(c.upstream)) for c in request.components if c.name not in unit_of]
    for chain in chain_list:
        size = Res()
        for member in chain:
            size = size + by_name[member].size
        head = by_name[chain[0]]
        components.append(ComponentNeed(unit_name(chain), head.parallelism, size,
                                        tuple(u for u in upstream(head.upstream) if u != unit_name(chain))))
    fused = replace(request, components=tuple(sorted(components, key=lambda c: c.name)))
    if request.workers is not None and request.workers > request.total_tasks:
        raise PackingError(f"topology.workers={request.workers} is more than the topology's {request.total_tasks} "
                           "tasks: a container would be empty")
    if request.workers is not None and fused.total_tasks < request.workers:
        # topology.workers counts containers of tasks; chained, fewer units may fill them all
        fused = replace(fused, workers=fused.total_tasks)
    return Fused(fused, {unit_name(chain): chain for chain in chain_list})


def expand(fused: Fused, assignment: list, members_of: Callable[[tuple], list]) -> list:
    """The algorithms' ``[(container id, [(component, task id, index)], used)]`` with each chain unit
    replaced by its members' instances (``members_of(unit) -> [(component, task id)]``)."""
    if not fused.chains:
        return assignment
    out = []
    for container, members, used in assignment:
        expanded = []
        for m in members:
            if m[0] in fused.chains:
                expanded.extend((component, task, m[2]) for component, task in members_of(m))
            else:
                expanded.append(m)
        out.append((container, expanded, used))
    return out


def units_of_plan(fused: Fused, container: schema.ContainerPlan) -> tuple:
    """A running container's instances as the algorithms see them: ``(items, known, split)``.

    ``items``: ``(component, task id, index)`` with each chain instance whose members are all here
    as one unit (task id: its head's); ``known``: unit item -> its members' ``(component, task id)``;
    ``split``: ``(unit, index) -> {member: task id}`` of chain instances only partly here (a chain
    this plan did not have): they are placed again, whole."""
    member_chain = {m: (unit, chain) for unit, chain in fused.chains.items() for m in chain}
    items: list = []
    groups: dict = {}
    for inst in container.instances:
        name, task, index = inst.id.component, inst.id.task_id, inst.id.component_index
        if name in member_chain:
            groups.setdefault((member_chain[name][0], index), {})[name] = task
        else:
            items.append((name, task, index))
    known: dict = {}
    split: dict = {}
    for (unit, index), tasks in sorted(groups.items()):
        chain = fused.chains[unit]
        if len(tasks) == len(chain):
            item = (unit, tasks[chain[0]], index)
            items.append(item)
            known[item] = [(m, tasks[m]) for m in chain]
        else:
            split[unit, index] = tasks
    return items, known, split


class TaskIds:
    """Task ids for the members of chain units: the ones they had, fresh ones above ``highest`` for
    the rest (in the order asked: deterministic)."""

    def __init__(self, fused: Fused, known: dict, split: dict, highest: int) -> None:
        self.fused, self.known, self.split, self.next = fused, known, split, highest + 1

    def __call__(self, item: tuple) -> list:
        if item in self.known:
            return self.known[item]
        had = self.split.get((item[0], item[2]), {})
        out = []
        for member in self.fused.chains[item[0]]:
            task = had.get(member)
            if task is None:
                task, self.next = self.next, self.next + 1
            out.append((member, task))
        return out


def check_together(chain_list: list, plan: schema.PackingPlan) -> None:
    """Every chain instance in one container (PackingError naming the first that is not)."""
    where = {(i.id.component, i.id.component_index): c.id for c in plan.containers for i in c.instances}
    for chain in chain_list:
        indexes = {index for (name, index) in where if name == chain[0]}
        for index in sorted(indexes):
            containers = {where.get((m, index)) for m in chain}
            if len(containers) != 1:
                raise PackingError(f"chain {unit_name(chain)!r}: its tasks of index {index} are in containers "
                                   f"{sorted(c for c in containers if c is not None)}, not one")
