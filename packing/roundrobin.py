"""Round-robin: a fixed number of containers (``topology.workers``, or the
fewest that fit when it is not set).

Task granularity deals instances in turn (largest component first, see
``instance_order``); worker granularity spreads them the JStorm way. Either
refuses a container that would exceed its capacity instead of shrinking
instances (Heron PR #2600).
"""
from __future__ import annotations

import heapq
from typing import Iterable, Mapping

from squall.packing.bins import Bins
from squall.packing.errors import PackingError
from squall.packing.request import Request, instance_order, key_for, topological_order
from squall.resources import MILLI


def round_robin(request: Request, bins: Bins, instances: Mapping[str, list], workers: int) -> None:
    """Open ``workers`` containers in the empty ``bins`` and deal or spread ``instances`` over them."""
    for _ in range(workers):
        bins.open()
    if request.granularity == "task":
        deal(bins, [inst for c in instance_order(request) for inst in instances.get(c.name, ())])
    else:
        spread(bins, topological_order(request), instances)


def fewest_round_robin(request: Request, instances: Mapping[str, list]) -> int:
    """The container count for round-robin when ``topology.workers`` is not set:
    the lower bound if round-robin fits it, else found by bisection between it
    and a count that surely fits. Every container then holds at most one more
    instance of each component than another, so each uses at most the average
    plus one instance of every component; with one task per container it fits
    anyway (each instance fits a container alone)."""
    total = sum(len(v) for v in instances.values())
    need = [0, 0, 0]
    one_each = [0, 0, 0]
    for c in request.components:
        n = len(instances.get(c.name, ()))
        for d, s in enumerate((c.size.cpu, c.size.ram, c.size.disk)):
            need[d] += n * s
            one_each[d] += s if n else 0
    room = (request.room.cpu, request.room.ram, request.room.disk)
    low = high = 1
    for n, s, r in zip(need, one_each, room):
        if r:
            low = max(low, -(-n // r))
            high = max(high, -(-n // (r - s)) if r > s else total)
    high = min(high, total)
    low = min(low, high)

    def fits(n: int) -> bool:
        bins = Bins(request.room, request.sizes)
        round_robin(request, bins, instances, n)
        return not any(True for _ in bins.overfull())

    if fits(low):
        return low
    while high - low > 1:
        mid = (low + high) // 2
        if fits(mid):
            high = mid
        else:
            low = mid
    return high


def deal(bins: Bins, instances: Iterable[tuple]) -> None:
    """Instance k goes to container k mod n."""
    n = len(bins)
    for k, instance in enumerate(instances):
        bins.add(k % n, instance)


def spread(bins: Bins, components: list, new: Mapping[str, list]) -> None:
    """JStorm's task spreading, component by component (``components`` upstream
    first): each task goes to the container with the fewest tasks of its
    component, then the fewest tasks, then the most tasks of its upstream
    components, then the lowest id. Containers may already hold instances."""
    n = len(bins)
    counts: dict = {}
    for w, members in enumerate(bins.members):
        for m in members:
            counts.setdefault(m[0], [0] * n)[w] += 1
    totals = [len(m) for m in bins.members]
    for component in components:
        instances = new.get(component.name)
        if not instances:
            continue
        same = counts.setdefault(component.name, [0] * n)
        ups = [counts[u] for u in component.upstream if u in counts]
        heap = [(same[w], totals[w], -sum(u[w] for u in ups), bins.ids[w], w) for w in range(n)]
        heapq.heapify(heap)
        for instance in instances:
            s, t, up, cid, w = heapq.heappop(heap)
            bins.add(w, instance)
            same[w] += 1
            totals[w] += 1
            heapq.heappush(heap, (s + 1, t + 1, up, cid, w))


def check_capacity(request: Request, bins: Bins) -> None:
    """Refuse the first container (by id) whose instances plus padding exceed capacity."""
    for i in sorted(bins.overfull(), key=lambda i: bins.ids[i]):
        used = bins.used(i)
        dim = used.over(request.room)[0]
        counts: dict = {}
        for m in bins.members[i]:
            counts[m[0]] = counts.get(m[0], 0) + 1
        holds = ", ".join(f"{name} x{n}" for name, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
        need = getattr(used + request.padding.of(used), dim)
        cap = getattr(request.cap, dim)
        if dim == "cpu":
            need, cap = need / MILLI, cap / MILLI
        what = "container" if request.granularity == "task" else "worker"
        raise PackingError(
            f"roundrobin: {what} {bins.ids[i]} would need {dim} {need:g} with padding, above "
            f"{key_for(request.cap_keys, dim)}={cap:g} (it holds {holds}); use more {what}s "
            f"(topology.workers, now {len(bins)}) or auto, rcrr or ffd"
        )
