"""The state manager interface: typed records of a topology, by kind and name.

Layout (DESIGN.md §4): ``<root>/<kind>/<topology>`` for the kinds below, and
``<root>/containers/<topology>/<container>`` for the one record per live
executor. Records are Thrift structs of the project's IDL (``locks``, ``health`` and ``healthmgrs``:
bytes); ``tmasters``, ``locks``, ``healthmgrs`` and ``containers`` records are ephemeral: they vanish when the
process that created them dies. ``<root>/elections/<topology>`` holds the
topology master's leader election (a recipe of the state manager).
"""
from __future__ import annotations

import enum
import threading
from abc import ABC, abstractmethod
from typing import Callable, Optional

from squall.errors import SquallError
from squall.idl import decode, encode, schema


class StateError(SquallError):
    """The state manager cannot do what was asked (names the path)."""


class AlreadyExists(StateError):
    """``create`` found a record already there."""


class StorageError(StateError):
    """The checkpoint storage cannot do what was asked (names the path and the operation): a failure of
    the runtime's storage (a full disk, a lost namenode), never of a task's user code."""


class Kind(enum.Enum):
    TOPOLOGY = "topologies"
    PACKING_PLAN = "packingplans"
    PHYSICAL_PLAN = "pplans"
    EXECUTION_STATE = "executionstate"
    TMASTER = "tmasters"
    SCHEDULER = "schedulers"
    LOCK = "locks"
    CONTAINER = "containers"
    CHECKPOINTS = "checkpoints"
    HEALTH = "health"  # health/<topology>/{control,manager}: its mode and decisions (JSON; health/store.py)
    HEALTH_MANAGER = "healthmgrs"  # the health manager that acts now (one per topology)
    FILES = "files"  # files/<topology>: the shipped files' versions in force (ShippedFiles)
    DEBUG = "debug"  # debug/<topology>: log levels and tuple sampling in force (squall/debugging.py)

    @property
    def struct(self) -> Optional[type]:
        """The IDL struct stored under this kind (None: raw bytes)."""
        return _STRUCTS.get(self)

    @property
    def ephemeral(self) -> bool:
        """Gone with the process that created it: a dead owner leaves no stale record."""
        return self in (Kind.TMASTER, Kind.LOCK, Kind.CONTAINER, Kind.HEALTH_MANAGER)

    @property
    def grouped(self) -> bool:
        """Records are ``<topology>/<member>``, several per topology."""
        return self in (Kind.CONTAINER, Kind.HEALTH)


ELECTIONS = "elections"


class Session(enum.Enum):
    """The state manager's connection, as kazoo reduces it."""

    CONNECTED = "connected"
    SUSPENDED = "suspended"  # cut off for now; the session and its ephemeral records may survive
    LOST = "lost"  # the session is gone, and with it every ephemeral record and leadership


class Election(ABC):
    """One candidate for a topology's leadership (the topology master).

    At most one candidate of a topology holds it at a time. ``holds()`` is
    the test a leader makes before every leader-only action: it turns false
    as soon as leadership may have passed to another candidate (the process
    is cut off from the state manager for too long, or its session is lost),
    not only once that is certain.
    """

    @abstractmethod
    def acquire(self, stop: threading.Event) -> bool:
        """Block until this candidate leads (True) or ``stop`` is set (False)."""

    @abstractmethod
    def holds(self) -> bool:
        """Leadership is this candidate's now: leader-only work may be done."""

    def ended(self) -> bool:
        """Leadership may have passed to another candidate: stop serving and compete again.

        ``holds()`` can be false for a while without this (cut off from the
        state manager, the session maybe alive): the leader then pauses its
        leader-only work and resumes if its leadership is confirmed.
        """
        return not self.holds()

    @abstractmethod
    def release(self) -> None:
        """Give leadership up (idempotent); a new ``acquire`` may compete again."""


_STRUCTS = {
    Kind.TOPOLOGY: schema.Topology,
    Kind.PACKING_PLAN: schema.PackingPlan,
    Kind.PHYSICAL_PLAN: schema.PhysicalPlan,
    Kind.EXECUTION_STATE: schema.ExecutionState,
    Kind.TMASTER: schema.TMasterLocation,
    Kind.SCHEDULER: schema.SchedulerLocation,
    Kind.CONTAINER: schema.ContainerStatus,
    Kind.CHECKPOINTS: schema.Checkpoints,
    Kind.FILES: schema.ShippedFiles,
    Kind.DEBUG: schema.Debug,
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
    def create(self, kind: Kind, name: str, value: object) -> None:
        """Write a new record; ``AlreadyExists`` if one is there (and, if
        ephemeral, its owner is alive)."""

    @abstractmethod
    def put(self, kind: Kind, name: str, value: object) -> None:
        """Write or replace a record atomically."""

    @abstractmethod
    def get(self, kind: Kind, name: str) -> object:
        """The record, or None when there is none."""

    @abstractmethod
    def delete(self, kind: Kind, name: str) -> None:
        """Remove a record; no error when it is not there."""

    @abstractmethod
    def names(self, kind: Kind) -> list:
        """Names of the records of ``kind``, sorted."""

    @abstractmethod
    def members(self, kind: Kind, topology: str) -> list:
        """Member names of a grouped kind's records of ``topology``, sorted."""

    @abstractmethod
    def watch(self, kind: Kind, name: str, callback: Callable[[object], None]) -> Callable[[], None]:
        """Call ``callback(record_or_None)`` after every change; returns a
        function that stops the watch. Callbacks must not block."""

    @abstractmethod
    def election(self, topology: str, identifier: str) -> Election:
        """A candidate for ``topology``'s leadership."""

    def add_listener(self, callback: Callable[[Session], None]) -> None:
        """Call ``callback(Session)`` on every change of the connection (must not block).

        A local directory has no connection to lose: the default never calls it.
        """

    @abstractmethod
    def _delete_group(self, kind: Kind, topology: str) -> None:
        """Remove every member record of ``topology`` of a grouped kind."""

    @abstractmethod
    def _delete_election(self, topology: str) -> None:
        """Remove ``topology``'s election (its candidates are gone)."""

    def container_records(self, topology: str) -> list[schema.ContainerStatus]:
        """The container records of ``topology`` (one per live executor), by container id; a record that
        vanishes between listing and reading is left out."""
        records = (self.get(Kind.CONTAINER, member(topology, m)) for m in self.members(Kind.CONTAINER, topology))
        return sorted((r for r in records if r is not None), key=lambda r: r.container)

    def delete_topology(self, name: str) -> None:
        """Remove every record of a topology (kill)."""
        for kind in Kind:
            if kind.grouped:
                self._delete_group(kind, name)
            else:
                self.delete(kind, name)
        self._delete_election(name)

    def __enter__(self) -> "StateManager":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def encode_record(kind: Kind, value: object) -> bytes:
    """The stored bytes of a record: the IDL's encoding, or raw bytes."""
    return value if kind.struct is None else encode(value)


def decode_record(kind: Kind, path: str, data: bytes) -> object:
    """A record from its stored bytes; a corrupt one is a StateError naming ``path``."""
    if kind.struct is None:
        return data
    try:
        return decode(kind.struct, data)
    except ValueError as e:
        raise StateError(f"state record {path} is corrupt: {e}") from e


def member(topology: str, name: object) -> str:
    """The record name of member ``name`` of ``topology`` in a grouped kind."""
    return f"{topology}/{name}"


def check_name(name: str, kind: Optional[Kind] = None) -> str:
    parts = name.split("/") if name else [""]
    if len(parts) != (2 if kind is not None and kind.grouped else 1) or any(
            not p or p.startswith(".") for p in parts):
        raise StateError(f"invalid state record name {name!r}")
    return name
