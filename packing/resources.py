"""Resource arithmetic: a frozen vector of whole units.

CPU is held in millicores (ints) so that sums are exact and every run adds the
same numbers in the same way; a configured CPU is rounded *up* to the next
millicore, never down. Memory and disk are whole MiB.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal
from typing import Iterator

from squall.idl import schema

MILLI = 1000


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
