"""The cluster as Squall sees it: nodes, who holds their resources, and their resource pools.

``cluster_view`` combines the ResourceManager's reports (capacity and
allocation per node, measured utilisation, running applications) with
Squall's own container records (where each Squall container runs and its
YARN shape). Applications are told apart by tag and type: Squall's carry the
``squall`` tag, Spark's have ``applicationType`` SPARK, the rest are others.
The ResourceManager reports allocation per node but not per application, so
a node's allocation splits into Squall's (from Squall's records) and the
rest; the cluster totals split into Squall, Spark and others.

Each node becomes a ``NodePool`` (``squall.packing.pool``): capacity, what
YARN allocated on it, and the measured use of everything on it. Its
*balance* is what the pool has left before clamping at zero; a negative
balance (measured use above the target share, e.g. Spark executors loading
the node) or an overloaded pool is what ``squall rebalance`` moves
containers away from.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Optional

from squall.packing import Amount, NodePool, PoolSample
from squall.state import Kind, StateManager
from squall.yarn.rest import NodeReport, RMClient

OWNERS = ("squall", "spark", "other")


@dataclass(frozen=True)
class SquallContainer:
    topology: str
    container: int
    host: str
    memory_mb: int
    vcores: int
    skein_container: str = ""


@dataclass(frozen=True)
class NodeView:
    report: NodeReport
    pool: NodePool
    squall: Amount  # allocated to Squall containers on this node

    @property
    def host(self) -> str:
        return self.report.host

    def balance(self) -> Amount:
        """The pool before clamping: negative when other work leaves Squall less than nothing."""
        p = self.pool
        used = p.measured or Amount(0.0, 0.0)
        return Amount(min(p.capacity.cpu - p.allocated.cpu, p.capacity.cpu * p.target - used.cpu),
                      min(p.capacity.ram_mb - p.allocated.ram_mb, p.capacity.ram_mb * p.target - used.ram_mb))

    def over(self) -> bool:
        b = self.balance()
        return self.pool.overloaded or b.cpu < 0 or b.ram_mb < 0


@dataclass(frozen=True)
class ClusterView:
    nodes: list
    queues: list
    apps: list
    by_owner: dict = field(default_factory=dict)  # owner -> Amount(vcores, MB) allocated cluster-wide

    def node(self, host: str) -> Optional[NodeView]:
        return next((n for n in self.nodes if n.host == host), None)


def node_pool(report: NodeReport, config: Mapping[str, object]) -> NodePool:
    pool = NodePool.from_config(report.host, Amount(max(report.capacity_vcores, 1), max(report.capacity_mb, 1)),
                                config)
    pool.allocate(Amount(report.used_vcores, report.used_mb))
    if report.measured_cpu is not None and report.measured_mb is not None:
        pool.observe(PoolSample(report.measured_cpu, report.measured_mb))
    return pool


def build_view(nodes: list, queues: list, apps: list, containers: list, config: Mapping[str, object]) -> ClusterView:
    """Pure: the ResourceManager's reports and Squall's containers -> the view."""
    squall_on: dict = {}
    for c in containers:
        a = squall_on.get(c.host, Amount(0.0, 0.0))
        squall_on[c.host] = Amount(a.cpu + c.vcores, a.ram_mb + c.memory_mb)
    views = [NodeView(n, node_pool(n, config), squall_on.get(n.host, Amount(0.0, 0.0)))
             for n in nodes if n.state in ("RUNNING", "")]
    by_owner = {o: Amount(0.0, 0.0) for o in OWNERS}
    for app in apps:
        a = by_owner[app.owner]
        by_owner[app.owner] = Amount(a.cpu + app.allocated_vcores, a.ram_mb + app.allocated_mb)
    return ClusterView(views, queues, apps, by_owner)


def fetch_view(rm: RMClient, containers: list, config: Mapping[str, object]) -> ClusterView:
    """The view from a ``rest.RMClient``."""
    return build_view(rm.nodes(), rm.queues(), rm.apps("RUNNING"), containers, config)


def moves(view: ClusterView, containers: list) -> list:
    """Containers to move off nodes whose pool has gone negative, in the order to move them:
    the most overdrawn node first, on each the largest container first (ties: lowest id)."""
    def overdraft(n: NodeView) -> float:
        b = n.balance()
        return min(b.cpu / n.pool.capacity.cpu, b.ram_mb / n.pool.capacity.ram_mb)
    over = sorted((n for n in view.nodes if n.over()), key=lambda n: (overdraft(n), n.host))
    out = []
    for node in over:
        here = [c for c in containers if c.host == node.host]
        out += sorted(here, key=lambda c: (-c.memory_mb, -c.vcores, c.container))
    return out


def squall_containers(state: StateManager, only: str = "") -> list:
    """Every container of the YARN topologies in ``state`` (or of topology ``only``), with its shape."""
    from squall.logical import topology_config
    from squall.packing import normalise, tmaster_container_resources

    out = []
    for name in [only] if only else state.names(Kind.EXECUTION_STATE):
        execution = state.get(Kind.EXECUTION_STATE, name)
        plan, topology = state.get(Kind.PACKING_PLAN, name), state.get(Kind.TOPOLOGY, name)
        if execution is None or plan is None or topology is None or execution.cluster != "yarn":
            continue
        config = topology_config(topology)
        resources = {c.id: c.resources for c in plan.containers} | {0: tmaster_container_resources(config)}
        for record in state.container_records(name):
            if record.container not in resources:
                continue
            memory, vcores = normalise(resources[record.container], config)
            out.append(SquallContainer(name, record.container, record.host, memory, vcores,
                                       record.skein_container or ""))
    return out


def view_json(view: ClusterView) -> dict:
    """The view as data: ``squall cluster --json`` and the UI's cluster page."""
    nodes = []
    for n in view.nodes:
        r, free, balance = n.report, n.pool.free(), n.balance()
        nodes.append({
            "host": n.host, "rack": r.rack, "labels": list(r.labels),
            "capacity": {"vcores": r.capacity_vcores, "mb": r.capacity_mb},
            "allocated": {"vcores": r.used_vcores, "mb": r.used_mb},
            "squall": {"vcores": n.squall.cpu, "mb": n.squall.ram_mb},
            "others": {"vcores": r.used_vcores - n.squall.cpu, "mb": r.used_mb - n.squall.ram_mb},
            "measured": {"vcores": r.measured_cpu, "mb": r.measured_mb},
            "pool": {"vcores": round(free.cpu, 2), "mb": round(free.ram_mb)},
            "balance": {"vcores": round(balance.cpu, 2), "mb": round(balance.ram_mb)},
            "state": "overloaded" if n.pool.overloaded else ("over" if n.over() else "ok"),
        })
    owners = {o: {"vcores": a.cpu, "mb": a.ram_mb} for o, a in view.by_owner.items()}
    queues = [{"queue": q.name, "scheduler": q.kind, "capacity_pct": q.capacity, "absolute_capacity_pct":
               q.absolute_capacity, "max_capacity_pct": q.max_capacity, "used_pct": q.used_capacity,
               "absolute_used_pct": q.absolute_used, "used_mb": q.used_mb, "used_vcores": q.used_vcores}
              for q in view.queues]
    return {"nodes": nodes, "allocated_by": owners, "queues": queues}
