"""What YARN will grant: container shapes normalised and, optionally, merged.

YARN rounds memory up to a multiple of ``yarn.scheduler.minimum-allocation-mb``
and grants whole vcores; a request above the maximum allocation is refused, so
Squall refuses it first, naming the component that makes the container too big.
A Skein service has one fixed shape, so merging shapes (at most
``squall.yarn.max.shapes``) trades a few rounded-up containers for fewer
services; the waste this adds is reported.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional

from squall.idl import schema

from squall.conf import base_config
from squall.packing.errors import PackingError
from squall.packing.resources import Res

_UNSET: Any = object()


@dataclass(frozen=True)
class YarnShape:
    memory_mb: int
    vcores: int
    containers: tuple  # container ids with this shape (0: topology master)


@dataclass(frozen=True)
class YarnShapes:
    """Normalised shapes. Waste is what YARN grants beyond what the plan asks:
    ``rounding_*`` from normalisation, ``merge_*`` added by merging shapes."""

    shapes: tuple
    by_container: dict = field(default_factory=dict)  # container id -> (memory_mb, vcores)
    rounding_waste_mb: int = 0
    rounding_waste_vcores: float = 0.0
    merge_waste_mb: int = 0
    merge_waste_vcores: int = 0


def normalise(resources: schema.Resources, config: Optional[Mapping[str, object]] = None) -> tuple:
    """``(memory_mb, vcores)`` YARN grants for a Thrift Resources: memory rounded
    up to ``squall.yarn.min.allocation.mb``, vcores = ceil(cpu), at least 1."""
    config = config if config is not None else base_config()
    return granted(Res.from_thrift(resources), config["squall.yarn.min.allocation.mb"])


def granted(resources: Res, step_mb: int) -> tuple:
    """``(memory_mb, vcores)`` YARN grants a container asking ``resources``: memory rounded up to
    ``step_mb``, whole vcores, at least one of each step."""
    return max(1, math.ceil(resources.ram / step_mb)) * step_mb, max(1, math.ceil(resources.cpu / 1000))


def yarn_shapes(
    plan: schema.PackingPlan,
    config: Optional[Mapping[str, object]] = None,
    max_shapes: Optional[int] = _UNSET,
    tmaster: Optional[schema.Resources] = None,
) -> YarnShapes:
    """Normalise every container of ``plan`` (and container 0 when ``tmaster``,
    its Thrift Resources, is given); refuse one above YARN's maximum; merge to
    at most ``max_shapes`` shapes (default ``squall.yarn.max.shapes``; None
    keeps all)."""
    config = config if config is not None else base_config()
    if max_shapes is _UNSET:
        max_shapes = config["squall.yarn.max.shapes"]
    if max_shapes is not None and max_shapes < 1:
        raise PackingError(f"squall.yarn.max.shapes={max_shapes}: must be at least 1")
    max_mb, max_vcores = config["squall.yarn.max.allocation.mb"], config["squall.yarn.max.allocation.vcores"]
    wanted = [(0, tmaster, [])] if tmaster is not None else []
    wanted += [(c.id, c.resources, c.instances) for c in plan.containers]
    by_container = {}
    waste_mb, waste_vcores = 0, 0.0
    for cid, resources, instances in wanted:
        memory, vcores = normalise(resources, config)
        if memory > max_mb:
            _too_big(plan, cid, instances, "ram", f"{memory} MB after rounding up to a multiple of "
                     f"squall.yarn.min.allocation.mb={config['squall.yarn.min.allocation.mb']}",
                     f"squall.yarn.max.allocation.mb={max_mb}")
        if vcores > max_vcores:
            _too_big(plan, cid, instances, "cpu", f"{vcores} vcores (cpu {resources.cpu:g} rounded up)",
                     f"squall.yarn.max.allocation.vcores={max_vcores}")
        by_container[cid] = (memory, vcores)
        waste_mb += memory - resources.ram_mb
        waste_vcores += vcores - Res.from_thrift(resources).cpu / 1000
    merged = _merge(by_container, max_shapes, max_mb, max_vcores)
    merge_mb = sum(merged[c][0] - by_container[c][0] for c in by_container)
    merge_vcores = sum(merged[c][1] - by_container[c][1] for c in by_container)
    groups: dict = {}
    for cid in sorted(merged):
        groups.setdefault(merged[cid], []).append(cid)
    shapes = tuple(YarnShape(m, v, tuple(ids)) for (m, v), ids in sorted(groups.items()))
    return YarnShapes(shapes, merged, waste_mb, round(waste_vcores, 3), merge_mb, merge_vcores)


def _too_big(plan: schema.PackingPlan, cid: int, instances: list, dim: str, need: str, limit: str) -> None:
    what = "topology master container 0" if cid == 0 else f"container {cid}"
    if plan.granularity == "worker" and cid != 0:
        key = "squall.worker.ram.mb" if dim == "ram" else "squall.worker.cpu"
        raise PackingError(f"{what} needs {need}, above {limit}: lower {key}")
    totals: dict = {}
    for inst in instances:
        r = inst.resources
        totals.setdefault(inst.id.component, [0, 0.0])
        totals[inst.id.component][0] += 1
        totals[inst.id.component][1] += r.ram_mb if dim == "ram" else r.cpu
    if not totals:
        raise PackingError(f"{what} needs {need}, above {limit}")
    name = max(sorted(totals), key=lambda c: totals[c][1])
    count, amount = totals[name]
    unit = "MB" if dim == "ram" else "cpu"
    raise PackingError(
        f"{what} needs {need}, above {limit}; component {name!r} makes it that big "
        f"({count} instances, {amount:g} {unit}): lower squall.container.max.{'ram.mb' if dim == 'ram' else 'cpu'} "
        f"or that component's size"
    )


def _merge(by_container: dict, max_shapes: Optional[int], max_mb: int, max_vcores: int) -> dict:
    """Greedily merge the two shapes whose common shape (per-dimension maximum)
    adds the least waste, weighting memory and vcores by YARN's maxima, until at
    most ``max_shapes`` remain. Ties go to the smaller shapes, so the result is
    deterministic. O(shapes^3), shapes being few."""
    counts: dict = {}
    for shape in by_container.values():
        counts[shape] = counts.get(shape, 0) + 1
    into = {s: s for s in counts}  # original shape -> merged shape
    if max_shapes is None:
        return dict(by_container)
    while len(counts) > max_shapes:
        best = None
        shapes = sorted(counts)
        for i, a in enumerate(shapes):
            for b in shapes[i + 1:]:
                m = (max(a[0], b[0]), max(a[1], b[1]))
                cost = sum(
                    counts[s] * ((m[0] - s[0]) / max_mb + (m[1] - s[1]) / max_vcores) for s in (a, b)
                )
                candidate = (cost, m, a, b)
                if best is None or candidate < best:
                    best = candidate
        _, m, a, b = best
        n = counts.pop(a) + counts.pop(b)
        counts[m] = counts.get(m, 0) + n
        for s, t in into.items():
            if t in (a, b):
                into[s] = m
    return {cid: into[shape] for cid, shape in by_container.items()}
