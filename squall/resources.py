"""Resources: a frozen vector of whole units, and how the configuration asks for them.

CPU is held in millicores (ints) so that sums are exact and every run adds the
same numbers in the same way; a configured CPU is rounded *up* to the next
millicore, never down. Memory and disk are whole MiB.

The reading of ``squall.component.*``, the container caps and the daemons'
padding lives here, below packing, so that packing (``packing/request.py``) and
the chaining rule (``squall/chaining.py``, which every process asks) read the
same sizes.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import Iterator, Mapping, Optional

from squall.idl import schema

MILLI = 1000
DIMS = ("cpu", "ram", "disk")
COMPONENT_KEYS = ("squall.component.cpu", "squall.component.ram.mb", "squall.component.disk.mb")
CAP_KEYS = {
    "task": ("squall.container.max.cpu", "squall.container.max.ram.mb", "squall.container.max.disk.mb"),
    "worker": ("squall.worker.cpu", "squall.worker.ram.mb", "squall.worker.disk.mb"),
}
_DAEMON_KEYS = (("squall.stmgr.cpu", "squall.stmgr.ram.mb", "squall.stmgr.disk.mb"),
                ("squall.metricsmgr.cpu", "squall.metricsmgr.ram.mb", "squall.metricsmgr.disk.mb"))


def cpu_to_millis(cpu: float) -> int:
    """Cores -> millicores, rounded up; ``Decimal(repr(x))`` so 0.29 is 290, not 291."""
    return int(math.ceil(Decimal(repr(float(cpu))) * MILLI))


@dataclass(frozen=True, order=True)
class Res:
    """cpu in millicores, ram and disk in MiB."""

    cpu: int = 0
    ram: int = 0
    disk: int = 0

    @classmethod
    def of(cls, cpu: float, ram_mb: int, disk_mb: int) -> "Res":
        return cls(cpu_to_millis(cpu), int(ram_mb), int(disk_mb))

    @classmethod
    def from_thrift(cls, r: schema.Resources) -> "Res":
        return cls.of(r.cpu, r.ram_mb, r.disk_mb)

    def to_thrift(self) -> schema.Resources:
        return schema.Resources(cpu=self.cpu / MILLI, ram_mb=self.ram, disk_mb=self.disk)

    def __iter__(self) -> Iterator[int]:
        return iter((self.cpu, self.ram, self.disk))

    def __add__(self, other: "Res") -> "Res":
        return Res(self.cpu + other.cpu, self.ram + other.ram, self.disk + other.disk)

    def __sub__(self, other: "Res") -> "Res":
        return Res(self.cpu - other.cpu, self.ram - other.ram, self.disk - other.disk)

    def times(self, n: int) -> "Res":
        return Res(self.cpu * n, self.ram * n, self.disk * n)

    def fits(self, cap: "Res") -> bool:
        """Every dimension of self is at most cap's."""
        return self.cpu <= cap.cpu and self.ram <= cap.ram and self.disk <= cap.disk

    def cores(self) -> float:
        return self.cpu / MILLI

    def over(self, cap: "Res") -> list:
        """Names of the dimensions where self exceeds cap, in (cpu, ram, disk) order."""
        return [d for d in ("cpu", "ram", "disk") if getattr(self, d) > getattr(cap, d)]

    def describe(self, dim: str) -> str:
        if dim == "cpu":
            return f"cpu {self.cpu / MILLI:g}"
        return f"{dim} {getattr(self, dim)} MB"

    def __str__(self) -> str:
        return f"cpu={self.cpu / MILLI:g} ram={self.ram}MB disk={self.disk}MB"


ZERO = Res()


def config_res(config: Mapping[str, object], keys: tuple) -> Res:
    """The resources the three ``keys`` (cpu, ram, disk) of a resolved ``config`` ask for."""
    return Res.of(config[keys[0]], config[keys[1]], config[keys[2]])


@dataclass(frozen=True)
class Padding:
    """What a container reserves on top of its instances.

    ``fixed`` is the daemons every container runs (stream manager + metrics
    manager); when ``percentage`` is set it replaces them: each dimension is
    padded by that share of the instances' sum, rounded up.
    """

    fixed: Res
    percentage: Optional[Fraction] = None

    @classmethod
    def of_config(cls, config: Mapping[str, object]) -> "Padding":
        """The padding a resolved topology ``config`` asks for."""
        daemons = config_res(config, _DAEMON_KEYS[0]) + config_res(config, _DAEMON_KEYS[1])
        pct = config["squall.packing.padding.percentage"]
        return cls(daemons, None if pct is None else Fraction(repr(float(pct))))

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
