"""The capacity model of one component: what an instance costs and what it can carry.

Written once, shared by the capacity report (``reports/``, from a run's aggregated
metrics) and the health manager (``health/``, from a running topology's window);
docs/reports.md states every formula. Per instance, over its loaded buckets
(it handled tuples; never a process's first bucket, which counts its start):

- service time ``S`` = time in ``process()`` per tuple (``execute_latency_ms``);
- busy fraction = arrival rate × ``S`` (Little's law, one server);
- cpu per tuple ``c`` = cpu seconds / tuples (everything the process spends);
- capacity at an allocation of ``a`` cores = min(1 / S, a / c).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Optional

EPSILON = 1e-9

OVERSUBSCRIBED = 0.9  # the run's processes used this share of the host's cores, or more
TIE = 0.1  # the two bounds closer than this (relative) are one: the wait is the CPU allocation's


@dataclass(frozen=True)
class Host:
    """A host of the run: its cores (when known) and what the run's processes used of them."""

    name: str
    cores: Optional[float]
    cores_used_mean: float

    @property
    def oversubscribed(self) -> bool:
        return self.cores is not None and self.cores_used_mean >= OVERSUBSCRIBED * self.cores


@dataclass(frozen=True)
class Load:
    """One component's instances as the model sees them."""

    kind: str  # "spout" | "bolt"
    service_secs: Optional[float]  # S: seconds in process() per tuple (bolts)
    cpu_per_tuple: Optional[float]  # c: cpu seconds per tuple
    busy: Optional[float]  # median busy fraction of a loaded bucket (bolts)
    cpu_used: Optional[float]  # median cores used in a loaded bucket
    busy_cpu: Optional[float]  # median cores used in a busy bucket
    requested: Optional[float]  # cores the packing plan gave an instance
    held: Optional[float]  # tuples inside an instance: rate × process latency (Little's law)

    @classmethod
    def of(cls, kind: str, stats: Mapping) -> "Load":
        def ratio(num: str, den: str) -> Optional[float]:
            return stats[num] / stats[den] if stats.get(num) is not None and stats.get(den) else None

        def cores(key: str) -> Optional[float]:
            return None if stats.get(key) is None else stats[key] / 100.0

        bolt = kind == "bolt"
        return cls(
            kind=kind,
            service_secs=ratio("load_exec_secs", "load_executed") if bolt else None,
            cpu_per_tuple=ratio("load_cpu_secs", "load_tuples"),
            busy=stats.get("busy_p50") if bolt else None,
            cpu_used=cores("load_cpu_p50"),
            busy_cpu=cores("busy_cpu_p50"),
            requested=stats.get("cpu_requested"),
            held=ratio("load_held_secs", "load_seconds") if bolt else None,
        )


@dataclass(frozen=True)
class Allocation:
    cores: float
    why: str
    shared: bool  # the cores are the instance's share of an oversubscribed host


def allocation(load: Load, host: Optional[Host]) -> Allocation:
    """Cores one instance may count on, and why: its request (one core without one: an
    instance is one thread), lowered to what it got while busy when its host was
    oversubscribed (its share of the host). Never more than it was given."""
    cores = min(1.0, load.requested) if load.requested is not None else 1.0
    why = f"request {cores:g} cores" if load.requested is not None else "no request: one core (one thread)"
    if host is not None and host.oversubscribed and load.busy_cpu is not None and load.busy_cpu < cores:
        return Allocation(load.busy_cpu, f"share of oversubscribed host {host.name}: {load.busy_cpu:.3g} cores "
                                         "while busy", True)
    return Allocation(cores, why, False)


def bounds(load: Load, cores: float) -> tuple:
    """``(wait bound 1/S or None, compute bound cores/c or None)`` in tuples/s."""
    wait = 1.0 / load.service_secs if load.service_secs else None
    compute = cores / load.cpu_per_tuple if load.cpu_per_tuple else None
    return wait, compute


def capacity(load: Load, cores: float, at_allocation: bool, shared: bool) -> tuple:
    """Tuples/s one instance carries at ``cores``: ``(capacity, basis, formula)``, or
    ``(None, "no load observed", "")``.

    basis: ``compute`` (cores / cpu per tuple is the lower bound, or the two bounds
    agree and the instance ran at its allocation), ``waiting`` (1 / S is lower: it
    waits, e.g. on I/O), ``host share`` (its host was oversubscribed: the bounds are
    what it got, and the report cannot tell waiting on I/O from waiting for a CPU)."""
    wait, compute = bounds(load, cores)
    if wait is None and compute is None:
        return None, "no load observed", ""
    if wait is None:
        return compute, "compute", f"{cores:g} cores / {_ms(load.cpu_per_tuple)} cpu per tuple = {num(compute)}"
    if compute is None:
        return wait, "waiting", f"1 / {_ms(load.service_secs)} in process() = {num(wait)}"
    value = min(wait, compute)
    tie = abs(wait - compute) <= TIE * value
    if shared:
        basis = "host share"
    elif (compute < wait and not tie) or (tie and at_allocation):
        basis = "compute"
    else:
        basis = "waiting"
    formula = (f"min(1 / {_ms(load.service_secs)} in process(), {cores:.3g} cores / {_ms(load.cpu_per_tuple)} "
               f"cpu per tuple) = min({num(wait)}, {num(compute)}) = {num(value)}")
    return value, basis, formula


def cpu_for(load: Load, per_instance_rate: float, allocated: float, margin: float, step: float) -> Optional[float]:
    """Cores an instance needs at ``per_instance_rate``: rate × c × (1 + margin), rounded
    up to ``step``, and never above what it is allocated now (the capacity the
    parallelism was computed at)."""
    if load.cpu_per_tuple is None:
        return None
    need = round_up(per_instance_rate * load.cpu_per_tuple * (1.0 + margin), step)
    return round(min(allocated, max(step, need)), 4)


def recommended_parallelism(target: float, capacity: float, headroom: float) -> int:
    """``ceil(target * (1 + headroom) / capacity)``, at least 1."""
    return max(1, math.ceil(target * (1.0 + headroom) / capacity - EPSILON))


def round_up(value: float, step: float) -> float:
    return math.ceil(value / step - 1e-9) * step


def _ms(seconds: Optional[float]) -> str:
    return "-" if seconds is None else f"{1000 * seconds:.3g} ms"


def num(x: float) -> str:
    """A rate for the formulas: thousands separated, three significant digits below 100."""
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"
