"""Packing by counts: all instances of a component have one size, so a
container is a vector of counts per component and a packing a list of such
vectors. Work here is per component and per *group* of identical containers,
not per instance, so its cost does not grow with parallelism.

``CountProblem`` holds the sizes (cpu millicores, ram MiB, disk MiB), the
counts to place and the room of one container. ``first_fit`` is first-fit
decreasing over groups of identical containers; ``orderings`` are the
component orders the auto algorithm tries; ``lower_bound`` is what no packing
can beat.
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Optional, Sequence

# A group of identical containers: [cpu, ram, disk, counts (list per component), how many].
Group = list
_UNBOUNDED = 1 << 62


@dataclass(frozen=True)
class CountProblem:
    sizes: tuple  # per component: (cpu, ram, disk) as ints
    counts: tuple  # per component: instances to place
    room: tuple  # (cpu, ram, disk) the instances of one container may use

    def per_container(self, used: Sequence[int], t: int) -> int:
        """How many more instances of component ``t`` fit a container using ``used``."""
        q = _UNBOUNDED
        for s, r, u in zip(self.sizes[t], self.room, used):
            if s:
                q = min(q, (r - u) // s)
        return max(q, 0)

    def with_counts(self, counts: Sequence[int]) -> "CountProblem":
        return CountProblem(self.sizes, tuple(counts), self.room)


def lower_bound(problem: CountProblem) -> int:
    """No packing uses fewer containers: the larger of the volume bound per
    dimension and, per dimension, the instances above half a container (no
    two of them share one)."""
    if not any(problem.counts):
        return 0
    bound = 1
    for d, room in enumerate(problem.room):
        volume = sum(n * s[d] for n, s in zip(problem.counts, problem.sizes))
        if room:
            bound = max(bound, -(-volume // room))
        bound = max(bound, sum(n for n, s in zip(problem.counts, problem.sizes) if 2 * s[d] > room))
    return bound


def orderings(problem: CountProblem) -> list:
    """Component orders for first-fit decreasing, largest first, ties by index
    (component name): by ram then cpu (Heron's FFD), by cpu then ram, and by
    size relative to the container: its largest dimension, the sum and the sum
    of squares of its dimensions. Exact fractions: no float ties."""
    def share(t: int) -> list:
        return [Fraction(s, r) for s, r in zip(problem.sizes[t], problem.room) if r]

    def by(key) -> list:
        return sorted(range(len(problem.sizes)), key=lambda t: (key(t), t))

    sizes = problem.sizes
    return [
        by(lambda t: (-sizes[t][1], -sizes[t][0], -sizes[t][2])),
        by(lambda t: (-sizes[t][0], -sizes[t][1], -sizes[t][2])),
        by(lambda t: -max(share(t), default=0)),
        by(lambda t: -sum(share(t))),
        by(lambda t: -sum(x * x for x in share(t))),
    ]


def first_fit(
    problem: CountProblem, order: Sequence[int], groups: Optional[list] = None, open_new: bool = True
) -> tuple:
    """First-fit decreasing, component by component in ``order``: each
    container, lowest first, takes as many instances as fit; what is left opens
    new containers (unless ``open_new`` is false). Exactly what first-fit per
    instance gives, since a container that refuses one instance of a component
    refuses the rest. ``groups`` (changed in place) may hold containers already.

    Returns ``(groups, left)``: ``left`` counts what found no container."""
    groups = [] if groups is None else groups
    left = list(problem.counts)
    k = len(problem.sizes)
    for t in order:
        n = left[t]
        if not n:
            continue
        size = problem.sizes[t]
        i = 0
        while n and i < len(groups):
            g = groups[i]
            q = problem.per_container(g, t)
            if not q:
                i += 1
                continue
            m = g[4]
            if n >= q * m:
                _add(g, t, q, size)
                n -= q * m
                i += 1
                continue
            full, rest = divmod(n, q)
            split = []
            if full:
                split.append(_add(_copy(g, full), t, q, size))
            if rest:
                split.append(_add(_copy(g, 1), t, rest, size))
            if m - full - (1 if rest else 0):
                split.append(_copy(g, m - full - (1 if rest else 0)))
            groups[i:i + 1] = split
            n = 0
        if n and open_new:
            q = min(n, problem.per_container((0, 0, 0), t))
            full, rest = divmod(n, q)
            if full:
                groups.append(_add([0, 0, 0, [0] * k, full], t, q, size))
            if rest:
                groups.append(_add([0, 0, 0, [0] * k, 1], t, rest, size))
            n = 0
        left[t] = n
    return groups, left


def fill_by_score(problem: CountProblem, score: str) -> list:
    """Bin-centric greedy (Panigrahy et al., "Heuristics for vector bin
    packing"): fill one container at a time, each time adding the instance
    that fits and scores best against what the container has left -- ``dot``:
    the largest dot product of its size and the room left; ``l2``: the
    smallest distance left between them -- ties to the lower index. A
    container keeps the mix of dimensions it was opened for, where first-fit
    decreasing fills its first containers with what is largest in one
    dimension and leaves the rest for the last ones.

    A finished container is repeated as often as the counts left allow: with
    the same components available it would be filled the same way again.
    Scores are exact integers (each dimension scaled by the product of the
    others' room squared)."""
    sizes, room = problem.sizes, problem.room
    k = len(sizes)
    w0, w1, w2 = (product_except(room, d) ** 2 if room[d] else 0 for d in range(3))
    left = list(problem.counts)
    groups = []
    while any(left):
        f0, f1, f2 = room  # free room of the container being filled
        take = [0] * k
        open_types = [t for t in range(k) if left[t]]
        while True:
            best, chosen, still = None, None, []
            for t in open_types:
                s0, s1, s2 = sizes[t]
                if s0 > f0 or s1 > f1 or s2 > f2 or left[t] == take[t]:
                    continue  # never again in this container: it only fills up
                still.append(t)
                if score == "dot":
                    value = s0 * f0 * w0 + s1 * f1 * w1 + s2 * f2 * w2
                else:
                    value = -((f0 - s0) ** 2 * w0 + (f1 - s1) ** 2 * w1 + (f2 - s2) ** 2 * w2)
                if best is None or value > best:
                    best, chosen = value, t
            if chosen is None:
                break
            open_types = still
            take[chosen] += 1
            s0, s1, s2 = sizes[chosen]
            f0, f1, f2 = f0 - s0, f1 - s1, f2 - s2
        times = min(left[t] // take[t] for t in range(k) if take[t])
        groups.append([room[0] - f0, room[1] - f1, room[2] - f2, take, times])
        for t in range(k):
            left[t] -= take[t] * times
    return groups


def product_except(values: Sequence[int], skip: int) -> int:
    p = 1
    for d, v in enumerate(values):
        if d != skip and v:
            p *= v
    return p


def _copy(g: Group, m: int) -> Group:
    return [g[0], g[1], g[2], list(g[3]), m]


def _add(g: Group, t: int, q: int, size: tuple) -> Group:
    g[0] += q * size[0]
    g[1] += q * size[1]
    g[2] += q * size[2]
    g[3][t] += q
    return g


def containers(groups: Sequence[Group]) -> int:
    return sum(g[4] for g in groups)


def expand(groups: Sequence[Group]) -> list:
    """One count vector (tuple) per container, in order."""
    return [tuple(g[3]) for g in groups for _ in range(g[4])]
