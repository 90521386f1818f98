"""The state manager interface: typed records of a topology, by kind and name.

Layout (DESIGN.md §4): ``<root>/<kind>/<topology>`` for the kinds below.
Records are Thrift structs of the project's IDL; ``tmasters`` and ``locks``
records are ephemeral: they vanish when the process that created them dies.
"""
from __future__ import annotations

import enum
from abc import ABC, abstractmethod
from typing import Any, Callable, Optional

from squall.errors import SquallError
from squall.idl import decode, encode, schema


class StateError(SquallError):
    """The state manager cannot do what was asked (names the path)."""


class AlreadyExists(StateError):
    """``create`` found a record already there."""


class Kind(enum.Enum):
    TOPOLOGY = "topologies"
    PACKING_PLAN = "packingplans"
    PHYSICAL_PLAN = "pplans"
    EXECUTION_STATE = "executionstate"
    TMASTER = "tmasters"
    SCHEDULER = "schedulers"
    LOCK = "locks"

    @property
    def struct(self) -> Optional[type]:
        """The IDL struct stored under this kind (None: raw bytes)."""
        return _STRUCTS.get(self)

    @property
    def ephemeral(self) -> bool:
        """Gone with the process that created it: a dead owner leaves no stale record."""
        return self in (Kind.TMASTER, Kind.LOCK)


_STRUCTS = {
    Kind.TOPOLOGY: schema.Topology,
    Kind.PACKING_PLAN: schema.PackingPlan,
    Kind.PHYSICAL_PLAN: schema.PhysicalPlan,
    Kind.EXECUTION_STATE: schema.ExecutionState,
    Kind.TMASTER: schema.TMasterLocation,
    Kind.SCHEDULER: schema.SchedulerLocation,
}


class StateManager(ABC):
    """Where a cluster keeps its topologies' plans and process locations.

    Implementations: ``LocalStateManager`` (a directory; the embedded default)
    and a ZooKeeper one behind the same interface. ``put`` and ``get`` take
    and return IDL structs (bytes for kinds without a struct).
    """

    @abstractmethod
    def start(self) -> None:
        ...

    @abstractmethod
    def close(self) -> None:
        """Idempotent; ephemeral records this manager created go away."""

    @abstractmethod
    def create(self, kind: Kind, name: str, value: Any) -> None:
        """Write a new record; ``AlreadyExists`` if one is there (and, if
        ephemeral, its owner is alive)."""

    @abstractmethod
    def put(self, kind: Kind, name: str, value: Any) -> None:
        """Write or replace a record atomically."""

    @abstractmethod
    def get(self, kind: Kind, name: str) -> Any:
        """The record, or None when there is none."""

    @abstractmethod
    def delete(self, kind: Kind, name: str) -> None:
        """Remove a record; no error when it is not there."""

    @abstractmethod
    def names(self, kind: Kind) -> list:
        """Names of the records of ``kind``, sorted."""

    @abstractmethod
    def watch(self, kind: Kind, name: str, callback: Callable[[Any], None]) -> Callable[[], None]:
        """Call ``callback(record_or_None)`` after every change; returns a
        function that stops the watch. Callbacks must not block."""

    def delete_topology(self, name: str) -> None:
        """Remove every record of a topology (kill)."""
        for kind in Kind:
            self.delete(kind, name)

    def __enter__(self) -> "StateManager":
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def encode_record(kind: Kind, value: Any) -> bytes:
    """The stored bytes of a record: the IDL's encoding, or raw bytes."""
    return value if kind.struct is None else encode(value)


def decode_record(kind: Kind, path: str, data: bytes) -> Any:
    """A record from its stored bytes; a corrupt one is a StateError naming ``path``."""
    if kind.struct is None:
        return data
    try:
        return decode(kind.struct, data)
    except ValueError as e:
        raise StateError(f"state record {path} is corrupt: {e}") from e


def check_name(name: str) -> str:
    if not name or "/" in name or name.startswith("."):
        raise StateError(f"invalid state record name {name!r}")
    return name
