"""Dynamic resource pools (JStorm's auto-adjusted slots, smoothed and with hysteresis).

A ``NodePool`` is what one node can offer right now. Its effective free
resources per dimension are::

    min(capacity - allocated, capacity * target_utilisation - smoothed_measured_use)

clamped at zero, where measured use is everything running on the node (ours
and other work, e.g. Spark executors), smoothed with an exponentially weighted
moving average. When the smoothed utilisation of CPU or memory rises above
the high mark the node is overloaded and offers nothing until both fall back
under the low mark, so a node near the threshold does not flap. Everything is
arithmetic on the samples fed in: the same sequence gives the same trajectory.
Disk is not pooled (YARN does not allocate it).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Optional, Sequence

from squall.idl import schema

from squall.packing.errors import PackingError


@dataclass(frozen=True)
class Amount:
    """CPU cores and memory MiB (floats: measured values are fractional)."""

    cpu: float
    ram_mb: float

    def fits(self, other: "Amount") -> bool:
        return self.cpu <= other.cpu + 1e-9 and self.ram_mb <= other.ram_mb + 1e-9


@dataclass(frozen=True)
class PoolSample:
    """Measured use on a node: CPU cores busy and memory MiB in use."""

    cpu: float
    ram_mb: float


class NodePool:
    """One node's capacity, what the resource manager allocated on it, and its
    smoothed measured utilisation."""

    def __init__(
        self,
        node: str,
        capacity: Amount,
        target: float = 0.8,
        high: float = 0.9,
        low: float = 0.7,
        alpha: float = 0.3,
    ):
        if capacity.cpu <= 0 or capacity.ram_mb <= 0:
            raise PackingError(f"node {node!r}: capacity must be positive, got {capacity}")
        if not 0 <= low <= high <= 1:
            raise PackingError(
                f"node {node!r}: need 0 <= squall.pool.low.mark ({low}) <= squall.pool.high.mark ({high}) <= 1"
            )
        self.node = node
        self.capacity = capacity
        self.target, self.high, self.low, self.alpha = target, high, low, alpha
        self.allocated = Amount(0.0, 0.0)
        self.measured: Optional[Amount] = None  # smoothed
        self.overloaded = False

    @classmethod
    def from_config(cls, node: str, capacity: Amount, config: Mapping[str, object]) -> "NodePool":
        return cls(
            node,
            capacity,
            target=config["squall.pool.target.utilisation"],
            high=config["squall.pool.high.mark"],
            low=config["squall.pool.low.mark"],
            alpha=config["squall.pool.ewma.alpha"],
        )

    def allocate(self, amount: Amount) -> None:
        self.allocated = Amount(self.allocated.cpu + amount.cpu, self.allocated.ram_mb + amount.ram_mb)

    def release(self, amount: Amount) -> None:
        self.allocated = Amount(
            max(0.0, self.allocated.cpu - amount.cpu), max(0.0, self.allocated.ram_mb - amount.ram_mb)
        )

    def observe(self, sample: PoolSample) -> None:
        """Fold one measurement into the moving average and update the overload state."""
        if self.measured is None:
            self.measured = Amount(sample.cpu, sample.ram_mb)
        else:
            a = self.alpha
            self.measured = Amount(
                a * sample.cpu + (1 - a) * self.measured.cpu,
                a * sample.ram_mb + (1 - a) * self.measured.ram_mb,
            )
        cpu_u, ram_u = self.utilisation()
        if self.overloaded:
            if cpu_u < self.low and ram_u < self.low:
                self.overloaded = False
        elif cpu_u > self.high or ram_u > self.high:
            self.overloaded = True

    def utilisation(self) -> tuple:
        """Smoothed measured ``(cpu, ram)`` utilisation as fractions of capacity."""
        if self.measured is None:
            return 0.0, 0.0
        return self.measured.cpu / self.capacity.cpu, self.measured.ram_mb / self.capacity.ram_mb

    def free(self) -> Amount:
        """Effective free resources (zero while overloaded)."""
        if self.overloaded:
            return Amount(0.0, 0.0)
        used = self.measured or Amount(0.0, 0.0)
        cap, alloc, t = self.capacity, self.allocated, self.target
        return Amount(
            max(0.0, min(cap.cpu - alloc.cpu, cap.cpu * t - used.cpu)),
            max(0.0, min(cap.ram_mb - alloc.ram_mb, cap.ram_mb * t - used.ram_mb)),
        )

    def __repr__(self) -> str:
        f = self.free()
        return f"<NodePool {self.node}: free cpu={f.cpu:.2f} ram={f.ram_mb:.0f}MB{' overloaded' if self.overloaded else ''}>"


@dataclass(frozen=True)
class Placement:
    assigned: dict = field(default_factory=dict)  # container id -> node
    unplaced: list = field(default_factory=list)  # (container id, reason)


def place(plan: schema.PackingPlan, pools: Sequence[NodePool],
          tmaster: Optional[schema.Resources] = None) -> Placement:
    """Assign containers to nodes best-fit decreasing on effective free resources.

    Containers largest first (memory, then CPU, then lowest id); each to the
    node whose free resources it leaves smallest (memory and CPU as shares of
    the node's capacity; ties by node name). ``tmaster`` (Thrift Resources)
    adds container 0. Pools are not changed: call ``allocate`` for what you
    launch. Deterministic for the same pools."""
    wanted = [(c.id, Amount(c.resources.cpu, c.resources.ram_mb)) for c in plan.containers]
    if tmaster is not None:
        wanted.append((0, Amount(tmaster.cpu, tmaster.ram_mb)))
    wanted.sort(key=lambda w: (-w[1].ram_mb, -w[1].cpu, w[0]))
    pools = sorted(pools, key=lambda p: p.node)
    free = {p.node: p.free() for p in pools}
    placement = Placement()
    for cid, need in wanted:
        best = None
        for p in pools:
            f = free[p.node]
            if need.fits(f):
                left = (f.ram_mb - need.ram_mb) / p.capacity.ram_mb + (f.cpu - need.cpu) / p.capacity.cpu
                if best is None or left < best[0]:
                    best = (left, p.node)
        if best is None:
            placement.unplaced.append((cid, _why(need, pools, free)))
            continue
        node = best[1]
        placement.assigned[cid] = node
        f = free[node]
        free[node] = Amount(f.cpu - need.cpu, f.ram_mb - need.ram_mb)
    return placement


def _why(need: Amount, pools: Sequence[NodePool], free: dict) -> str:
    if not pools:
        return "no nodes"
    if all(p.overloaded for p in pools):
        return "every node is overloaded"
    roomiest = max(pools, key=lambda p: (free[p.node].ram_mb, free[p.node].cpu, p.node))
    f = free[roomiest.node]
    return (
        f"needs cpu {need.cpu:g}, ram {need.ram_mb:g} MB; the most any node offers is "
        f"cpu {f.cpu:.2f}, ram {f.ram_mb:.0f} MB ({roomiest.node})"
    )
