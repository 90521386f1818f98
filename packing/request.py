"""What a packing needs to know, resolved once from a topology and its config.

Every algorithm, the validator and repacking read the same ``Request``, so they
agree on instance sizes, container capacity and padding.
"""
from __future__ import annotations

import heapq
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Callable, Mapping, Optional

from squall.conf import Config, base_config
from squall.idl import schema
from squall.logical import component_config, topology_config
from squall.packing.errors import PackingError
from squall.packing.resources import Res

ALGORITHMS = ("auto", "roundrobin", "rcrr", "ffd")
GRANULARITIES = ("task", "worker")

CAP_KEYS = {
    "task": ("squall.container.max.cpu", "squall.container.max.ram.mb", "squall.container.max.disk.mb"),
    "worker": ("squall.worker.cpu", "squall.worker.ram.mb", "squall.worker.disk.mb"),
}
_COMPONENT_KEYS = ("squall.component.cpu", "squall.component.ram.mb", "squall.component.disk.mb")
DIMS = ("cpu", "ram", "disk")


def config_res(config: Mapping[str, object], keys: tuple) -> Res:
    return Res.of(config[keys[0]], config[keys[1]], config[keys[2]])


def key_for(keys: tuple, dim: str) -> str:
    return keys[DIMS.index(dim)]


@dataclass(frozen=True)
class Padding:
    """What a container reserves on top of its instances.

    ``fixed`` is the daemons every container runs (stream manager + metrics
    manager); when ``percentage`` is set it replaces them: each dimension is
    padded by that share of the instances' sum, rounded up.
    """

    fixed: Res
    percentage: Optional[Fraction] = None

    def of(self, used: Res) -> Res:
        if self.percentage is None:
            return self.fixed
        p = self.percentage / 100
        return Res(*(int(math.ceil(getattr(used, d) * p)) for d in DIMS))

    def room(self, cap: Res) -> Res:
        """The largest instance sum ``u`` (per dimension) with ``u + of(u) <= cap``."""
        if self.percentage is None:
            return cap - self.fixed
        p = self.percentage / 100
        out = []
        for d in DIMS:
            c = getattr(cap, d)
            x = int(c / (1 + p))
            while x + 1 + math.ceil((x + 1) * p) <= c:
                x += 1
            while x > 0 and x + math.ceil(x * p) > c:
                x -= 1
            out.append(x)
        return Res(*out)


@dataclass(frozen=True)
class ComponentNeed:
    name: str
    parallelism: int
    size: Res
    upstream: tuple  # names of the components it reads from (sorted)


@dataclass(frozen=True)
class Request:
    topology_name: str
    algorithm: str
    granularity: str
    components: tuple  # ComponentNeed, in name order
    workers: Optional[int]  # topology.workers; None: as many as needed
    cap: Res  # largest container (task) or the worker size (worker)
    cap_keys: tuple
    padding: Padding
    ffd_sort: str
    spouts: frozenset = frozenset()  # names of the spout components (their task ids are bounded)
    yarn_step_mb: int = 1  # squall.yarn.min.allocation.mb: what a container's memory is rounded up to

    @property
    def room(self) -> Res:
        return self.padding.room(self.cap)

    @property
    def sizes(self) -> dict:
        return {c.name: c.size for c in self.components}

    @property
    def total_tasks(self) -> int:
        return sum(c.parallelism for c in self.components)

    def container_resources(self, used: Res) -> Res:
        """What a container holding ``used`` asks for."""
        if self.granularity == "worker":
            return self.cap
        return used + self.padding.of(used)


def choose(value: Optional[str], config: Mapping[str, object], key: str, choices: tuple) -> str:
    chosen = config[key] if value is None else value
    if chosen not in choices:
        raise PackingError(f"unknown {key.rsplit('.', 1)[-1]} {chosen!r} ({key}): expected one of {', '.join(choices)}")
    return chosen


def build_request(
    topology: schema.Topology,
    base: Optional[Config] = None,
    algorithm: Optional[str] = None,
    granularity: Optional[str] = None,
    parallelism: Optional[Mapping[str, int]] = None,
) -> Request:
    """Resolve config for ``topology``; refuse an instance that cannot fit any container.

    ``parallelism`` overrides components' parallelism (repacking).
    """
    if base is None:
        base = base_config()  # once: every component_config below reuses it
    config = topology_config(topology, base)
    algorithm = choose(algorithm, config, "squall.packing.algorithm", ALGORITHMS)
    granularity = choose(granularity, config, "squall.packing.granularity", GRANULARITIES)
    cap_keys = CAP_KEYS[granularity]
    cap = config_res(config, cap_keys)
    daemons = config_res(config, ("squall.stmgr.cpu", "squall.stmgr.ram.mb", "squall.stmgr.disk.mb")) + config_res(
        config, ("squall.metricsmgr.cpu", "squall.metricsmgr.ram.mb", "squall.metricsmgr.disk.mb")
    )
    pct = config["squall.packing.padding.percentage"]
    padding = Padding(daemons, None if pct is None else Fraction(repr(float(pct))))
    parallelism = parallelism or {}
    components = []
    for component in sorted(topology.components, key=lambda c: c.name):
        cc = component_config(topology, component.name, base)
        size = config_res(cc, _COMPONENT_KEYS)
        par = parallelism.get(component.name, component.parallelism)
        upstream = tuple(sorted({i.component for i in component.inputs} - {component.name}))
        components.append(ComponentNeed(component.name, par, size, upstream))
    request = Request(
        topology_name=topology.name,
        algorithm=algorithm,
        granularity=granularity,
        components=tuple(components),
        workers=config["topology.workers"],
        cap=cap,
        cap_keys=cap_keys,
        padding=padding,
        ffd_sort=config["squall.packing.ffd.sort"],
        spouts=frozenset(c.name for c in topology.components if c.kind == schema.ComponentKind.SPOUT),
        yarn_step_mb=config["squall.yarn.min.allocation.mb"],
    )
    check_each_fits(request)
    return request


def check_each_fits(request: Request, what: Callable[[str], str] = lambda name: f"component {name!r}") -> None:
    """Refuse a component one instance of which cannot fit an empty container (``what`` names it)."""
    room = request.room
    for c in request.components:
        if c.parallelism < 1:
            raise PackingError(f"component {c.name!r}: parallelism must be >= 1, got {c.parallelism}")
        for dim in c.size.over(room):
            key = key_for(request.cap_keys, dim)
            pad = getattr(request.padding.of(c.size), dim)
            unit = "" if dim == "cpu" else " MB"
            need = getattr(c.size, dim)
            cap = getattr(request.cap, dim)
            if dim == "cpu":
                need, pad, cap = need / 1000, pad / 1000, cap / 1000
            raise PackingError(
                f"{what(c.name)}: one instance needs {dim} {need:g}{unit} "
                f"({_COMPONENT_KEYS[DIMS.index(dim)]}) plus {pad:g}{unit} padding, more than a "
                f"{'container' if request.granularity == 'task' else 'worker'} holds: {key}={cap:g}"
            )


def instance_order(request: Request, key: str = "ram") -> list:
    """Components largest first by the dominant resource ``key`` (ram: ram, cpu,
    disk; cpu: cpu, ram, disk), ties by name. The one ordering rule for dealing
    (round-robin) and fitting (first-fit decreasing)."""
    def sort_key(c: ComponentNeed) -> tuple:
        s = c.size
        dims = (s.ram, s.cpu, s.disk) if key == "ram" else (s.cpu, s.ram, s.disk)
        return tuple(-d for d in dims) + (c.name,)

    return sorted(request.components, key=sort_key)


def topological_order(request: Request) -> list:
    """Components upstream first (Kahn's algorithm, ties by name); a cycle's
    remaining members follow in name order."""
    by_name = {c.name: c for c in request.components}
    indegree = {c.name: sum(1 for u in c.upstream if u in by_name) for c in request.components}
    downstream: dict = {c.name: [] for c in request.components}
    for c in request.components:
        for u in c.upstream:
            if u in by_name:
                downstream[u].append(c.name)
    ready = [n for n, d in indegree.items() if d == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        n = heapq.heappop(ready)
        order.append(n)
        for m in downstream[n]:
            indegree[m] -= 1
            if indegree[m] == 0:
                heapq.heappush(ready, m)
    seen = set(order)
    order.extend(n for n in sorted(by_name) if n not in seen)
    return [by_name[n] for n in order]

