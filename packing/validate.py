"""The one plan validator, used by every algorithm, by repacking and by the tests."""
from __future__ import annotations

from typing import Optional

from squall.idl import schema

from squall.conf import Config
from squall.logical import MAX_SPOUT_TASK
from squall.packing.errors import PackingError
from squall.packing.request import Request, build_request
from squall.resources import Res


def validate_plan(topology: schema.Topology, plan: schema.PackingPlan, base: Optional[Config] = None) -> None:
    """Raise PackingError naming the first broken invariant of ``plan``:

    every task of every component placed exactly once; task ids unique;
    component indexes 0..parallelism-1 without gaps; instances sized as their
    component's config says; no empty container; container ids >= 1 and
    unique; each container's resources >= its instances plus padding (padding
    at least what the config asks for) and within capacity (worker
    granularity: exactly the worker size); the tasks of a chain instance in
    one container (``squall.chaining``).
    """
    from squall.chaining import chains
    from squall.packing.chained import check_together

    request = build_request(topology, base, plan.algorithm, plan.granularity)
    check_plan(request, plan)
    check_together(chains(topology, base, plan.granularity), plan)


def check_plan(request: Request, plan: schema.PackingPlan) -> None:
    where = f"packing plan {plan.id!r}"
    if plan.algorithm != request.algorithm or plan.granularity != request.granularity:
        raise PackingError(f"{where}: made by {plan.algorithm}/{plan.granularity}, checked as "
                           f"{request.algorithm}/{request.granularity}")
    sizes = {c.name: c.size for c in request.components}
    par = {c.name: c.parallelism for c in request.components}
    expected = {name: (size.cpu / 1000, size.ram, size.disk) for name, size in sizes.items()}
    seen_indexes: dict = {name: set() for name in sizes}
    seen_tasks: set = set()
    seen_containers: set = set()
    cache: dict = {}

    def res_of(r: schema.Resources) -> Res:
        key = (r.cpu, r.ram_mb, r.disk_mb)
        res = cache.get(key)
        if res is None:
            res = cache[key] = Res.from_thrift(r)
        return res

    for container in plan.containers:
        cid = container.id
        at = f"{where}: container {cid}"
        if not isinstance(cid, int) or cid < 1:
            raise PackingError(f"{at}: container ids start at 1 (0 is the topology master's)")
        if cid in seen_containers:
            raise PackingError(f"{at}: container id used twice")
        seen_containers.add(cid)
        if not container.instances:
            raise PackingError(f"{at}: holds no instances")
        used_cpu = used_ram = used_disk = 0
        n_tasks = len(seen_tasks)
        for inst in container.instances:
            iid, r = inst.id, inst.resources
            name, task, index = iid.component, iid.task_id, iid.component_index
            indexes = seen_indexes.get(name)
            if (
                indexes is None
                or not (0 <= index < par[name])
                or index in indexes
                or (r.cpu, r.ram_mb, r.disk_mb) != expected[name]
                or not isinstance(task, int)
                or task < 1
            ):
                _instance_error(f"{at}: instance {name}[{index}] (task {task})", name, index, task, r,
                                sizes, par, seen_indexes)
            if task > MAX_SPOUT_TASK and name in request.spouts:
                raise PackingError(f"{at}: spout {name!r}: task id {task} is above {MAX_SPOUT_TASK}, the highest a "
                                   "spout may have (at least once, a tuple tree's root carries its spout's task id "
                                   "in 16 bits); give the topology fewer tasks")
            indexes.add(index)
            seen_tasks.add(task)
            if len(seen_tasks) == n_tasks:
                raise PackingError(f"{at}: instance {name}[{index}] (task {task}): task id used twice")
            n_tasks += 1
            size = sizes[name]
            used_cpu += size.cpu
            used_ram += size.ram
            used_disk += size.disk
        _check_container(request, at, Res(used_cpu, used_ram, used_disk), res_of(container.padding),
                         res_of(container.resources))
    for name, indexes in seen_indexes.items():
        if len(indexes) != par[name]:
            missing = sorted(set(range(par[name])) - indexes)
            raise PackingError(
                f"{where}: component {name!r} has {len(indexes)} of {par[name]} instances placed "
                f"(missing component indexes {missing[:10]})"
            )


def _instance_error(label: str, name: str, index: int, task: object, r: schema.Resources, sizes: dict, par: dict,
                    seen_indexes: dict) -> None:
    if name not in sizes:
        raise PackingError(f"{label}: the topology has no component {name!r}")
    if not (0 <= index < par[name]):
        raise PackingError(f"{label}: component index outside 0..{par[name] - 1} (parallelism {par[name]})")
    if index in seen_indexes[name]:
        raise PackingError(f"{label}: component index placed twice")
    if not isinstance(task, int) or task < 1:
        raise PackingError(f"{label}: task ids start at 1")
    raise PackingError(f"{label}: resources {Res.from_thrift(r)}, but component {name!r} asks for {sizes[name]}")


def _check_container(request: Request, at: str, used: Res, padding: Res, resources: Res) -> None:
    want_padding = request.padding.of(used)
    if not want_padding.fits(padding):
        raise PackingError(f"{at}: padding {padding} is below the {want_padding} the config asks for")
    if not (used + padding).fits(resources):
        raise PackingError(f"{at}: resources {resources} are below its instances ({used}) plus padding ({padding})")
    what = "container" if request.granularity == "task" else "worker"
    over = resources.over(request.cap)
    if over:
        keys = dict(zip(("cpu", "ram", "disk"), request.cap_keys))
        raise PackingError(f"{at}: {resources.describe(over[0])} is above the {what} capacity {keys[over[0]]} ({request.cap})")
    if request.granularity == "worker" and resources != request.cap:
        raise PackingError(f"{at}: a worker has the fixed size {request.cap}, not {resources}")
