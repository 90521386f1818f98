"""Resource-compliant round-robin and first-fit decreasing.

Both place instances component by component (all instances of a component
have the same size) into ``Bins`` that may already hold instances (repacking),
opening a container when none fits. Neither restarts from scratch, and neither
is quadratic in instances: a container that fails for one instance of a
component fails for the rest of it (containers only fill up), so each
component visits each container at most once, and containers too full for the
smallest instance of all are skipped for good.
"""
from __future__ import annotations

from collections import deque
from typing import Sequence

from squall.packing.bins import Bins
from squall.resources import Res


def smallest(sizes: Sequence[Res]) -> Res:
    """The per-dimension minimum: a container that cannot take it takes nothing."""
    return Res(min(s.cpu for s in sizes), min(s.ram for s in sizes), min(s.disk for s in sizes))


def round_robin_fit(bins: Bins, groups: Sequence[tuple], cursor: int = 0) -> int:
    """``groups``: ``[(size, [instances])]`` in dealing order. Instances are dealt
    in turn over the open containers starting at index ``cursor``; a container
    that cannot take the instance leaves this component's ring; when the ring
    is empty a new container opens. Returns the cursor for a later call."""
    if not groups:
        return cursor
    least = smallest([g[0] for g in groups])
    closed = [not bins.fits(i, least) for i in range(len(bins))]
    cpu, ram, disk, members, room = bins.cpu, bins.ram, bins.disk, bins.members, bins.room
    least_cpu, least_ram, least_disk = room.cpu - least.cpu, room.ram - least.ram, room.disk - least.disk
    for size, instances in groups:
        max_cpu, max_ram, max_disk = room.cpu - size.cpu, room.ram - size.ram, room.disk - size.disk
        n = len(bins)
        ring = deque(i for i in list(range(cursor, n)) + list(range(0, min(cursor, n))) if not closed[i])
        for instance in instances:
            while ring and (cpu[ring[0]] > max_cpu or ram[ring[0]] > max_ram or disk[ring[0]] > max_disk):
                ring.popleft()
            if not ring:
                ring.append(bins.open())
                closed.append(False)
            i = ring[0]
            members[i].append(instance)
            cpu[i] += size.cpu
            ram[i] += size.ram
            disk[i] += size.disk
            if cpu[i] > least_cpu or ram[i] > least_ram or disk[i] > least_disk:
                closed[i] = True
            ring.rotate(-1)
        cursor = ring[0] if ring else 0
    return cursor


def first_fit(bins: Bins, groups: Sequence[tuple]) -> None:
    """``groups`` in decreasing order: each instance to the lowest-id container
    that fits, else a new one."""
    if not groups:
        return
    least = smallest([g[0] for g in groups])
    # nxt[i] == i: container i is open; else a pointer towards the next open one.
    nxt = [i if bins.fits(i, least) else i + 1 for i in range(len(bins))]

    def find(i: int) -> int:
        root = i
        while root < len(nxt) and nxt[root] != root:
            root = nxt[root]
        while i < len(nxt) and nxt[i] != i:  # path compression
            nxt[i], i = root, nxt[i]
        return root

    cpu, ram, disk, members, room = bins.cpu, bins.ram, bins.disk, bins.members, bins.room
    least_cpu, least_ram, least_disk = room.cpu - least.cpu, room.ram - least.ram, room.disk - least.disk
    for size, instances in groups:
        # a container fits this size iff its usage is at most these limits
        max_cpu, max_ram, max_disk = room.cpu - size.cpu, room.ram - size.ram, room.disk - size.disk
        p = find(0)
        n = len(nxt)
        for instance in instances:
            while p < n and (cpu[p] > max_cpu or ram[p] > max_ram or disk[p] > max_disk):
                p = find(p + 1)
            if p >= n:
                p = bins.open()
                nxt.append(p)
                n += 1
            members[p].append(instance)
            cpu[p] += size.cpu
            ram[p] += size.ram
            disk[p] += size.disk
            if cpu[p] > least_cpu or ram[p] > least_ram or disk[p] > least_disk:
                nxt[p] = p + 1
