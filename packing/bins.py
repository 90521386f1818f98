"""The working state of a packing: containers being filled, in id order.

Algorithms and repacking share it. Containers hold instances as
``(component, task_id, component_index)`` tuples; usage is kept as three
plain int lists so that the hot loops stay cheap.
"""
from __future__ import annotations

from typing import Iterable, Optional

from squall.resources import Res

Instance = tuple  # (component, task_id, component_index)


class Bins:
    """Containers with ids, members and usage; ``room`` is the most instances
    may use in one container once padding is reserved."""

    def __init__(self, room: Res, sizes: dict):
        self.room = room
        self.sizes = sizes
        self.ids: list = []
        self.members: list = []
        self.cpu: list = []
        self.ram: list = []
        self.disk: list = []
        self.next_id = 1

    def __len__(self) -> int:
        return len(self.ids)

    def open(self, container_id: Optional[int] = None) -> int:
        """Add an empty container (next id unless given); returns its index."""
        if container_id is None:
            container_id = self.next_id
        self.next_id = max(self.next_id, container_id + 1)
        self.ids.append(container_id)
        self.members.append([])
        self.cpu.append(0)
        self.ram.append(0)
        self.disk.append(0)
        return len(self.ids) - 1

    def fits(self, i: int, size: Res) -> bool:
        room = self.room
        return (
            self.cpu[i] + size.cpu <= room.cpu
            and self.ram[i] + size.ram <= room.ram
            and self.disk[i] + size.disk <= room.disk
        )

    def add(self, i: int, instance: Instance) -> None:
        size = self.sizes[instance[0]]
        self.members[i].append(instance)
        self.cpu[i] += size.cpu
        self.ram[i] += size.ram
        self.disk[i] += size.disk

    def add_all(self, i: int, instances: list) -> None:
        """Add instances of one component."""
        if not instances:
            return
        size = self.sizes[instances[0][0]]
        n = len(instances)
        self.members[i].extend(instances)
        self.cpu[i] += n * size.cpu
        self.ram[i] += n * size.ram
        self.disk[i] += n * size.disk

    def remove(self, i: int, instance: Instance) -> None:
        size = self.sizes[instance[0]]
        self.members[i].remove(instance)
        self.cpu[i] -= size.cpu
        self.ram[i] -= size.ram
        self.disk[i] -= size.disk

    def retain(self, indexes: list) -> None:
        """Keep only the containers at ``indexes`` (in that order)."""
        for attr in ("ids", "members", "cpu", "ram", "disk"):
            values = getattr(self, attr)
            setattr(self, attr, [values[i] for i in indexes])

    def used(self, i: int) -> Res:
        return Res(self.cpu[i], self.ram[i], self.disk[i])

    def overfull(self) -> Iterable[int]:
        room = self.room
        for i in range(len(self.ids)):
            if self.cpu[i] > room.cpu or self.ram[i] > room.ram or self.disk[i] > room.disk:
                yield i

    def assignment(self) -> list:
        """``[(container_id, [instances], used)]`` of the non-empty containers, by id."""
        out = [
            (cid, m, Res(c, r, d))
            for cid, m, c, r, d in zip(self.ids, self.members, self.cpu, self.ram, self.disk)
            if m
        ]
        out.sort(key=lambda a: a[0])
        return out
