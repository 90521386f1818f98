"""``pack``: a topology and its config in, a validated PackingPlan out."""
from __future__ import annotations

from typing import Mapping, Optional

from squall.idl import schema

from squall.conf import Config, base_config
from squall.logical import task_ids
from squall.packing.auto import pack_auto, place_into
from squall.chaining import chains
from squall.packing.bins import Bins
from squall.packing.chained import check_together, expand, fuse
from squall.packing.build import build_plan
from squall.packing.errors import PackingError
from squall.packing.fit import first_fit, round_robin_fit
from squall.packing.request import Request, build_request, instance_order, topological_order
from squall.packing.roundrobin import check_capacity, fewest_round_robin, round_robin, spread
from squall.packing.validate import check_plan
from squall.resources import CAP_KEYS, config_res


def pack(
    topology: schema.Topology,
    base: Optional[Config] = None,
    algorithm: Optional[str] = None,
    granularity: Optional[str] = None,
) -> schema.PackingPlan:
    """Pack ``topology`` (the Thrift Topology struct) into containers 1..n.

    ``algorithm`` and ``granularity`` default to ``squall.packing.algorithm``
    and ``squall.packing.granularity`` as resolved for the topology. The plan
    is deterministic byte for byte and passes ``validate_plan``; container 0
    (topology master) is not in it: see ``tmaster_container_resources``.
    """
    request = build_request(topology, base, algorithm, granularity)
    chain_list = chains(topology, base, request.granularity)
    fused = fuse(request, chain_list)
    ids = task_ids(topology)
    for unit, chain in fused.chains.items():  # a chain instance is one unit, known by its head's task id
        ids[unit] = ids[chain[0]]
        for member in chain:
            del ids[member]
    instances = {name: [(name, tid, i) for i, tid in enumerate(tids)] for name, tids in ids.items()}
    bins = Bins(fused.request.room, fused.request.sizes)
    place_new(fused.request, bins, instances, fresh=True)
    real = task_ids(topology)
    assignment = expand(fused, bins.assignment(), lambda item: [(m, real[m][item[2]]) for m in fused.chains[item[0]]])
    plan = build_plan(request, assignment)
    check_plan(request, plan)
    check_together(chain_list, plan)
    return plan


def place_new(request: Request, bins: Bins, instances: Mapping[str, list], fresh: bool = False) -> None:
    """Place ``instances`` (by component) into ``bins`` with the request's algorithm.

    ``fresh``: ``bins`` is empty (a new plan); otherwise ``bins`` holds a
    running plan's containers and round-robin keeps their number.
    """
    algorithm = request.algorithm
    total = sum(len(v) for v in instances.values())
    if algorithm == "auto":
        if fresh:
            pack_auto(request, bins, instances)
        else:
            place_into(request, bins, instances)
    elif algorithm == "roundrobin":
        if fresh:
            workers = request.workers
            if workers is None:
                workers = fewest_round_robin(request, instances)
            elif workers > total:
                raise PackingError(
                    f"topology.workers={workers} is more than the topology's {total} tasks: "
                    "round-robin would leave containers empty"
                )
            round_robin(request, bins, instances, workers)
        else:
            spread(bins, topological_order(request), instances)
        check_capacity(request, bins)
    elif algorithm == "rcrr":
        if fresh:
            for _ in range(min(request.workers or 1, total)):
                bins.open()
        round_robin_fit(bins, _groups(request, instance_order(request), instances))
    else:
        first_fit(bins, _groups(request, instance_order(request, request.ffd_sort), instances))


def _groups(request: Request, order: list, instances: Mapping[str, list]) -> list:
    return [(c.size, instances[c.name]) for c in order if instances.get(c.name)]


def container_cap(config: Mapping[str, object], granularity: str) -> schema.Resources:
    """The largest container the packing makes at ``granularity`` (Thrift Resources):
    ``squall.container.max.*`` per task, the worker size per worker."""
    return config_res(config, CAP_KEYS[granularity]).to_thrift()


def tmaster_container_resources(config: Optional[Mapping[str, object]] = None) -> schema.Resources:
    """Container 0: the topology master and its metrics manager (Thrift Resources).

    ``config`` is a resolved config (e.g. ``topology_config(topology, base)``);
    defaults when None.
    """
    if config is None:
        config = base_config()
    tmaster = config_res(config, ("squall.tmaster.cpu", "squall.tmaster.ram.mb", "squall.tmaster.disk.mb"))
    metrics = config_res(config, ("squall.metricsmgr.cpu", "squall.metricsmgr.ram.mb", "squall.metricsmgr.disk.mb"))
    return (tmaster + metrics).to_thrift()
