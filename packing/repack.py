"""Repacking a running topology to new parallelism (and, for round-robin, a new
container count) while moving as little as possible.

Rules, in order:

1. Scale-down first empties whole containers holding only that component
   (fewest instances first) while the excess allows, then removes one
   instance at a time from the container that frees most: one the removal
   empties (its padding goes too), then the one with the fewest instances, the
   highest share of that component, the highest id; the instance removed
   there is the one with the highest component index.
2. Survivors whose component index is now >= the parallelism take the freed
   indexes (lowest first), keeping task id and container, so indexes stay
   0..par-1 (reported as ``renumbered``).
3. Round-robin with a new container count drops the highest-id containers
   (their instances are re-placed) or opens new ones and rebalances task
   counts to differ by at most one.
4. auto/rcrr/ffd: a container now above capacity (component sizes changed)
   gives up as few instances as will do (``_evict_overfull``); nothing leaves
   a container that fits.
5. New instances get task ids after the plan's highest and indexes after the
   component's current ones; they and any displaced instance are placed by the
   plan's algorithm into the existing containers first (auto: into their
   gaps, then as few new containers as it finds).
6. auto/rcrr/ffd, when a component scales down or a request shrinks: the
   least-filled container whose instances all fit the others' free room is
   emptied into them and given back (``_consolidate``), while one is.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Mapping, Optional

from squall.chaining import chains
from squall.conf import Config
from squall.idl import replace, schema
from squall.packing.bins import Bins
from squall.packing.chained import TaskIds, check_together, expand, fuse, units_of_plan
from squall.packing.build import build_plan
from squall.packing.errors import PackingError
from squall.packing.pack import place_new
from squall.packing.request import Request, build_request
from squall.resources import Res
from squall.packing.validate import check_plan
from squall.logical import encode_config


@dataclass(frozen=True)
class PlanDiff:
    """What changed between two plans, by task id; lists of Thrift InstanceIds."""

    added: list = field(default_factory=list)
    removed: list = field(default_factory=list)
    moved: list = field(default_factory=list)
    renumbered: list = field(default_factory=list)  # (old InstanceId, new InstanceId)
    resized: list = field(default_factory=list)  # kept, with other resources (component config changed)


def with_parallelism(topology: schema.Topology, parallelism: Mapping[str, int]) -> schema.Topology:
    """A copy of the Thrift topology with some components' parallelism replaced."""
    return replace(topology, components=[
        replace(c, parallelism=parallelism.get(c.name, c.parallelism)) for c in topology.components
    ])


def with_component_config(topology: schema.Topology,
                          configs: Mapping[str, Mapping[str, object]]) -> schema.Topology:
    """A copy of the Thrift topology with keys set in some components' config
    (``{component: {"squall.component.cpu": 0.6}}``): what ``repack`` takes to
    resize instances. Values are checked when the topology is next packed."""
    names = {c.name for c in topology.components}
    for name in configs:
        if name not in names:
            raise PackingError(f"component {name!r}: the topology has no such component")
    return replace(topology, components=[
        replace(c, config={**c.config, **encode_config(configs[c.name], f"components.{c.name}.config")})
        if c.name in configs else c
        for c in topology.components
    ])


def repack(
    topology: schema.Topology,
    plan: schema.PackingPlan,
    new_parallelism: Mapping[str, int],
    base: Optional[Config] = None,
    containers: Optional[int] = None,
) -> tuple:
    """Return ``(new_plan, PlanDiff)`` for ``plan`` scaled to ``new_parallelism``
    (component -> parallelism; others keep the topology's). ``containers``: the
    new container count, round-robin only. The new plan validates against
    ``with_parallelism(topology, ...)``."""
    names = {c.name for c in topology.components}
    for name, par in new_parallelism.items():
        if name not in names:
            raise PackingError(f"component {name!r}: the topology has no such component")
        if isinstance(par, bool) or not isinstance(par, int) or par < 1:
            raise PackingError(f"component {name!r}: parallelism must be a positive integer, got {par!r}")
    par = {c.name: c.parallelism for c in topology.components}
    par.update(new_parallelism)
    request = build_request(topology, base, plan.algorithm, plan.granularity, parallelism=par)
    if containers is not None and request.algorithm != "roundrobin":
        raise PackingError(
            f"containers={containers}: only roundrobin takes a container count; {request.algorithm} chooses it"
        )
    # chains as the new parallelism makes them: each chain instance is one unit (packing/chained.py)
    chain_list = chains(with_parallelism(topology, par), base, request.granularity)
    fused = fuse(request, chain_list)
    unit_par = {n: p for n, p in par.items() if not any(n in chain for chain in fused.chains.values())}
    unit_par.update({unit: par[chain[0]] for unit, chain in fused.chains.items()})

    bins = Bins(fused.request.room, fused.request.sizes)
    known: dict = {}
    split: dict = {}
    for c in sorted(plan.containers, key=lambda c: c.id):
        i = bins.open(c.id)
        for inst in c.instances:
            if inst.id.component not in names:
                raise PackingError(f"packing plan {plan.id!r}: component {inst.id.component!r} is not in topology "
                                   f"{topology.name!r}")
        items, here_known, here_split = units_of_plan(fused, c)
        known.update(here_known)
        for key, tasks in here_split.items():  # a chain instance's tasks in several containers
            split.setdefault(key, {}).update(tasks)
        for item in items:
            bins.add(i, item)

    _scale_down(bins, unit_par)
    displaced = _resize_containers(fused.request, bins, containers) if request.algorithm == "roundrobin" \
        else _evict_overfull(bins)
    # a chain the old plan did not have: its tasks go together, placed again (index beyond the new
    # parallelism: scaled away)
    displaced += [(unit, min(tasks.values()), index) for (unit, index), tasks in sorted(split.items())
                  if index < unit_par[unit]]
    new = _new_instances(bins, displaced, plan, unit_par)
    for instance in displaced:
        new.setdefault(instance[0], []).append(instance)
    place_new(fused.request, bins, new)
    if request.algorithm == "roundrobin" and containers is not None:
        _rebalance(bins)
    elif request.algorithm != "roundrobin" and _gives_back(request, plan):
        _consolidate(bins)
    highest = max([i.id.task_id for c in plan.containers for i in c.instances]
                  + [m[1] for members in bins.members for m in members], default=0)
    assignment = expand(fused, bins.assignment(), TaskIds(fused, known, split, highest))
    new_plan = build_plan(request, assignment)
    check_plan(request, new_plan)
    check_together(chain_list, new_plan)
    return new_plan, diff_plans(plan, new_plan)


def _scale_down(bins: Bins, par: Mapping[str, int]) -> None:
    holders: dict = {}  # component -> {bin index: [instances by index]}
    for i, members in enumerate(bins.members):
        for m in members:
            holders.setdefault(m[0], {}).setdefault(i, []).append(m)
    for name in sorted(holders):
        by_bin = holders[name]
        count = sum(len(v) for v in by_bin.values())
        excess = count - par[name]
        if excess <= 0:
            continue
        for v in by_bin.values():
            v.sort(key=lambda m: m[2])
        freed = []
        # first empty whole containers that hold only this component, fewest instances first
        only = sorted((len(v), -bins.ids[i], i) for i, v in by_bin.items() if len(v) == len(bins.members[i]))
        for n, _, i in only:
            if n > excess:
                break
            for victim in by_bin.pop(i):
                bins.remove(i, victim)
                freed.append(victim[2])
            excess -= n

        def key(i: int) -> tuple:
            total, mine = len(bins.members[i]), len(by_bin[i])
            return (total != 1, total, -mine / total, -bins.ids[i], i)

        heap = [key(i) for i in by_bin]
        heapq.heapify(heap)
        for _ in range(excess):
            i = heapq.heappop(heap)[-1]
            victim = by_bin[i].pop()
            bins.remove(i, victim)
            freed.append(victim[2])
            if by_bin[i]:
                heapq.heappush(heap, key(i))
        target = par[name]
        holes = sorted(x for x in freed if x < target)
        high = sorted(((m, i) for i, v in by_bin.items() for m in v if m[2] >= target), key=lambda mi: mi[0][2])
        for hole, (m, i) in zip(holes, high):
            members = bins.members[i]
            members[members.index(m)] = (m[0], m[1], hole)


def _evict_overfull(bins: Bins) -> list:
    """Containers above capacity (component sizes changed) give up as few
    instances as will do: the smallest whose leaving alone makes the container
    fit, else the one that takes most off the excess, until it fits. Ties: the
    newest (highest task id). Nothing leaves a container that fits."""
    displaced = []
    room = bins.room
    for i in list(bins.overfull()):
        while True:
            excess = [max(0, u - r) for u, r in zip(bins.used(i), room)]
            if not any(excess):
                break
            newest: dict = {}
            for m in bins.members[i]:
                if m[1] > newest.get(m[0], (None, 0))[1]:
                    newest[m[0]] = m
            candidates = [(bins.sizes[name], m) for name, m in sorted(newest.items())]
            enough = [(s, m) for s, m in candidates if all(x >= e for x, e in zip(s, excess))]
            if enough:
                size, victim = min(enough, key=lambda sm: (_share(sm[0], room), -sm[1][1]))
            else:
                size, victim = max(candidates, key=lambda sm: (_relief(sm[0], excess), sm[1][1]))
            bins.remove(i, victim)
            displaced.append(victim)
    return displaced


def _share(size: Res, room: Res) -> Fraction:
    return sum((Fraction(s, r) for s, r in zip(size, room) if r), Fraction(0))


def _relief(size: Res, excess: list) -> Fraction:
    """How much of the excess leaving takes away, each dimension as a share of its excess."""
    return sum((Fraction(min(s, e), e) for s, e in zip(size, excess) if e), Fraction(0))


def _resize_containers(request: Request, bins: Bins, containers: Optional[int]) -> list:
    total = sum(c.parallelism for c in request.components)
    if containers is None:
        return []
    if containers < 1 or containers > total:
        raise PackingError(
            f"containers={containers}: round-robin needs between 1 and the topology's {total} tasks"
        )
    displaced = []
    order = sorted(range(len(bins)), key=lambda i: bins.ids[i])
    for i in order[containers:]:
        for m in list(bins.members[i]):
            bins.remove(i, m)
            displaced.append(m)
    bins.retain(order[:containers])  # spreading must not refill the dropped ones
    while len(bins) < containers:
        bins.open()
    return displaced


def _gives_back(request: Request, plan: schema.PackingPlan) -> bool:
    """The update scales a component down or shrinks an instance's request: what it frees may free a container."""
    old_par: dict = {}
    old_size: dict = {}
    for c in plan.containers:
        for inst in c.instances:
            old_par[inst.id.component] = old_par.get(inst.id.component, 0) + 1
            old_size[inst.id.component] = Res.from_thrift(inst.resources)
    return any(c.name in old_par and (c.parallelism < old_par[c.name]
                                      or any(n < o for n, o in zip(c.size, old_size[c.name])))
               for c in request.components)


def _consolidate(bins: Bins) -> None:
    """Give containers back: while every instance of the least-filled container fits in the others' free room
    (largest first, first fit), move them there; the emptied container leaves the plan. A right-sized or
    scaled-down topology otherwise keeps every container it had, each a YARN grant of whole vcores (JStorm's
    pools follow the measured load). Only whole containers: nothing moves unless one is freed."""
    while len(bins) > 1:
        for i in sorted(range(len(bins)), key=lambda i: (len(bins.members[i]), -bins.ids[i])):
            if not bins.members[i]:
                continue
            members = sorted(bins.members[i], key=lambda m: _share(bins.sizes[m[0]], bins.room), reverse=True)
            moved: list = []
            for m in members:
                j = next((j for j in range(len(bins)) if j != i and bins.members[j]
                          and bins.fits(j, bins.sizes[m[0]])), None)
                if j is None:
                    break
                bins.remove(i, m)
                bins.add(j, m)
                moved.append((j, m))
            if len(moved) == len(members):
                break  # container i is empty: the plan leaves it out
            for j, m in moved:  # it cannot be emptied: every instance goes back where it was
                bins.remove(j, m)
                bins.add(i, m)
        else:
            return


def _rebalance(bins: Bins) -> None:
    """Move instances from the fullest to the emptiest container until task
    counts differ by at most one (round-robin after adding containers)."""
    n = len(bins)
    while True:
        sizes = [len(m) for m in bins.members]
        donor = max(range(n), key=lambda i: (sizes[i], bins.ids[i]))
        receiver = min(range(n), key=lambda i: (sizes[i], bins.ids[i]))
        if sizes[donor] - sizes[receiver] <= 1:
            return
        theirs: dict = {}
        for m in bins.members[receiver]:
            theirs[m[0]] = theirs.get(m[0], 0) + 1
        mine: dict = {}
        for m in bins.members[donor]:
            mine[m[0]] = mine.get(m[0], 0) + 1
        name = max(mine, key=lambda c: (mine[c] - theirs.get(c, 0), c))
        m = max((m for m in bins.members[donor] if m[0] == name), key=lambda m: m[1])
        bins.remove(donor, m)
        bins.add(receiver, m)


def _new_instances(bins: Bins, displaced: list, plan: schema.PackingPlan, par: Mapping[str, int]) -> dict:
    present: dict = {}
    max_task = 0
    for c in plan.containers:
        for inst in c.instances:
            max_task = max(max_task, inst.id.task_id)
    for members in bins.members + [displaced]:
        for m in members:
            present[m[0]] = present.get(m[0], 0) + 1
    new: dict = {}
    for name in sorted(par):
        have = present.get(name, 0)
        if par[name] > have:
            new[name] = []
            for index in range(have, par[name]):
                max_task += 1
                new[name].append((name, max_task, index))
    return new


def renumber_containers(topology: schema.Topology, plan: schema.PackingPlan, ids: Mapping[int, int],
                        base: Optional[Config] = None) -> schema.PackingPlan:
    """``plan`` with containers ``ids`` maps given new ids (the same instances in each): a scheduler
    that cannot grow a container in place moves it whole to a new one."""
    request = build_request(topology, base, plan.algorithm, plan.granularity)
    assignment = []
    for c in plan.containers:
        used = Res()
        for i in c.instances:
            used = used + Res.from_thrift(i.resources)
        assignment.append((ids.get(c.id, c.id), [(i.id.component, i.id.task_id, i.id.component_index)
                                                 for i in c.instances], used))
    renumbered = build_plan(request, assignment)
    check_plan(request, renumbered)
    return renumbered


def diff_plans(old: schema.PackingPlan, new: schema.PackingPlan) -> PlanDiff:
    """Instances added, removed, moved (other container), renumbered and resized, by task id."""
    def where(plan: schema.PackingPlan) -> dict:
        return {i.id.task_id: (c.id, i.id, i.resources) for c in plan.containers for i in c.instances}

    before, after = where(old), where(new)
    diff = PlanDiff()
    for task in sorted(set(before) | set(after)):
        if task not in after:
            diff.removed.append(before[task][1])
        elif task not in before:
            diff.added.append(after[task][1])
        else:
            (c0, id0, r0), (c1, id1, r1) = before[task], after[task]
            if c0 != c1:
                diff.moved.append(id1)
            if id0 != id1:
                diff.renumbered.append((id0, id1))
            if r0 != r1:
                diff.resized.append(id1)
    return diff
