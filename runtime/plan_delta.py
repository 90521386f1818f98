"""A physical plan sent as what changed since the last one (``PhysicalPlanDelta``).

The topology master sends each stream manager the whole plan once (its registration) and then, on
every change, only the stream managers and instances added or changed and the containers and tasks
gone: at 1,000 containers the plan is ~480 KB, and sending it whole to every stream manager on each
change (a restarted task changes a pid) was 480 MB a change, buffered in the leader
(bench/RESULTS.md, "Control plane at scale"). A delta names the version it applies to; a stream
manager holding another asks for the whole plan again by registering again.

Pure: the leader builds plans in one order (containers by id, each one's instances by task id, and
the stream managers by container), so applying a delta rebuilds the leader's plan exactly.
"""
from __future__ import annotations

import copy
from typing import Optional

from squall.errors import SquallError
from squall.idl import schema


class StalePlan(SquallError):
    """A delta for a plan version the stream manager does not hold."""


def versioned(plan: schema.PhysicalPlan, version: Optional[int]) -> schema.PhysicalPlan:
    """A copy of ``plan`` numbered ``version`` (the leader's count of its publications)."""
    out = copy.copy(plan)
    out.version = version
    return out


def same_plan(a: schema.PhysicalPlan, b: schema.PhysicalPlan) -> bool:
    """The same plan whatever its version."""
    return versioned(a, None) == versioned(b, None)


def plan_delta(base: schema.PhysicalPlan, new: schema.PhysicalPlan) -> schema.PhysicalPlanDelta:
    """What turns ``base`` into ``new`` (both versioned)."""
    old_stmgrs = {s.container: s for s in base.stmgrs}
    new_stmgrs = {s.container: s for s in new.stmgrs}
    old_instances = {i.id.task_id: i for i in base.instances}
    new_instances = {i.id.task_id: i for i in new.instances}
    return schema.PhysicalPlanDelta(
        base_version=base.version, version=new.version, packing_plan_id=new.packing_plan_id, status=new.status,
        tmaster=new.tmaster,
        stmgrs=[s for c, s in new_stmgrs.items() if old_stmgrs.get(c) != s],
        stmgrs_removed=sorted(set(old_stmgrs) - set(new_stmgrs)),
        instances=[i for t, i in new_instances.items() if old_instances.get(t) != i],
        instances_removed=sorted(set(old_instances) - set(new_instances)),
        max_spout_pending=new.max_spout_pending)


def apply_delta(base: schema.PhysicalPlan, delta: schema.PhysicalPlanDelta) -> schema.PhysicalPlan:
    """The plan ``delta`` makes of ``base``; ``StalePlan`` when ``base`` is not the version it applies to."""
    if base.version is None or base.version != delta.base_version:
        raise StalePlan(f"a plan delta for version {delta.base_version}, and this stream manager holds "
                        f"version {base.version}")
    stmgrs = {s.container: s for s in base.stmgrs}
    for c in delta.stmgrs_removed:
        stmgrs.pop(c, None)
    stmgrs.update((s.container, s) for s in delta.stmgrs)
    instances = {i.id.task_id: i for i in base.instances}
    for t in delta.instances_removed:
        instances.pop(t, None)
    instances.update((i.id.task_id, i) for i in delta.instances)
    return schema.PhysicalPlan(
        topology_name=base.topology_name, packing_plan_id=delta.packing_plan_id, status=delta.status,
        tmaster=delta.tmaster, stmgrs=[stmgrs[c] for c in sorted(stmgrs)],
        instances=sorted(instances.values(), key=lambda i: (i.container, i.id.task_id)),
        max_spout_pending=delta.max_spout_pending, version=delta.version)
