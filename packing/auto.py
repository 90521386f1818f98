"""``auto``: the least YARN grants, from the fewest containers it can find, opening as many as needed.

1. First-fit decreasing by counts under each of ``counts.orderings`` (Heron's
   ram-first FFD among them, so never more containers than ``ffd``) and the
   two bin-centric fills of ``counts.fill_by_score``; the fewest containers
   wins, the earlier in that list on a tie.
2. If that is above the lower bound and small enough to search
   (``SEARCH_CONTAINERS``), a bounded exact search (``search.Search``) looks
   for a packing into one container fewer, again and again, until it proves
   there is none, reaches the lower bound or spends ``SEARCH_STEPS``; each
   target is tried under two component orders, each with half the steps.
3. Up to ``SEARCH_CONTAINERS`` containers, what YARN grants (memory
   rounded up to ``squall.yarn.min.allocation.mb``, whole vcores; each as a
   share of the largest container, summed: ``yarn_cost``) is minimised, not
   the count alone (that left rounding waste: the packing-policy report
   ranked round-robin above ``auto`` on a heterogeneous topology).
   Instances move, or swap two at a time, between containers while that
   lowers it (``cheapest``; at most ``IMPROVE_STEPS`` weighed), so a
   container just past a rounding step gives its overhang to one with room
   below its own; this is done from the fewest-containers packing, the other
   greedy packings and the instances dealt round robin over as many
   containers and one more, and the least wins (``cheapest_of``): never more
   than ``ffd`` grants (its orders are among the greedy ones), though it may
   take a container more than the fewest. Above that many containers the
   packing of step 1 stands (the candidates would cost more time than the
   rest of ``pack``).
4. ``topology.workers`` set to W above that count: the instances are dealt
   largest first over W containers (``fit.round_robin_fit``, a container
   that cannot take an instance is skipped); should that need more than W,
   the fewest-container packing's container with the most instances is
   split in two until there are W.

Everything is counted in whole units and steps, never timed, so the plan is
the same byte for byte on every run.
"""
from __future__ import annotations

import itertools
from typing import Mapping, Optional, Sequence

from squall.packing.bins import Bins
from squall.packing.counts import (CountProblem, containers, expand, fill_by_score, first_fit, lower_bound,
                                   orderings)
from squall.packing.errors import PackingError
from squall.packing.fit import round_robin_fit
from squall.packing.request import Request
from squall.packing.resources import Res
from squall.packing.search import Search
from squall.packing.yarn import granted

SEARCH_CONTAINERS = 64  # above this many containers, the greedy packing stands
SEARCH_STEPS = 30_000  # per packing; a step is one node of the search
SEARCH_ORDERS = (3, 0)  # which of ``orderings`` the search tries, each with its share of the steps
IMPROVE_STEPS = 8_000  # changes the YARN objective weighs at most, over all candidate packings


def count_problem(request: Request, instances: Mapping[str, list]) -> CountProblem:
    """The problem over ``instances`` (component -> instances), components in name order."""
    room = request.room
    return CountProblem(
        sizes=tuple((c.size.cpu, c.size.ram, c.size.disk) for c in request.components),
        counts=tuple(len(instances.get(c.name, ())) for c in request.components),
        room=(room.cpu, room.ram, room.disk),
    )


def greedy(problem: CountProblem) -> list:
    """The greedy packings (grouped count vectors): first fit decreasing under each of ``orderings``,
    then the two bin-centric fills."""
    found = [first_fit(problem, order)[0] for order in orderings(problem)]
    return found + [fill_by_score(problem, "dot"), fill_by_score(problem, "l2")]


def fewest(problem: CountProblem) -> list:
    """Count vectors, one per container, of the fewest-container packing found."""
    orders = orderings(problem)
    solution = expand(min(greedy(problem), key=containers))  # the first of the fewest
    bound = lower_bound(problem)
    if bound < len(solution) <= SEARCH_CONTAINERS:
        search = Search(problem, SEARCH_STEPS)
        tries = [orders[t] for t in SEARCH_ORDERS]
        while len(solution) > bound and search.steps_left > 0:
            for order in tries:
                found = search.fewer(len(solution) - 1, order, SEARCH_STEPS // len(tries))
                if found is not None or search.proven:
                    break
            if found is None:
                break
            solution = found
    return solution


def pack_auto(request: Request, bins: Bins, instances: Mapping[str, list]) -> None:
    """Fill the empty ``bins`` with ``instances`` (component -> instances by index)."""
    problem = count_problem(request, instances)
    solution = fewest(problem)
    workers = request.workers
    if workers is not None and workers > len(solution):
        total = sum(problem.counts)
        if workers > total:
            raise PackingError(
                f"topology.workers={workers} is more than the topology's {total} tasks: "
                "a container would be empty"
            )
        dealt = _deal(request, problem, instances, workers)
        if dealt is not None:
            for members in dealt:
                i = bins.open()
                for m in members:
                    bins.add(i, m)
            return
        solution = split(solution, workers)
    elif len(solution) <= SEARCH_CONTAINERS:
        solution = cheapest_of(request, problem, instances, solution, keep=workers or 0)
    place(request, bins, instances, solution)


def cheapest_of(request: Request, problem: CountProblem, instances: Mapping[str, list], solution: Sequence[tuple],
                keep: int = 0) -> list[tuple]:
    """The least YARN grants (``yarn_cost``, then containers) among ``solution`` (the fewest
    containers found), the other greedy packings and the instances dealt round robin over as many
    containers and one more, each improved by ``cheapest`` (``IMPROVE_STEPS`` shared among them)."""
    names = [c.name for c in request.components]
    candidates = [[tuple(v) for v in solution]] + [expand(g) for g in greedy(problem)]
    for n in (len(solution), len(solution) + 1):
        dealt = _deal(request, problem, instances, n) if n <= sum(problem.counts) else None
        if dealt is not None:
            candidates.append([tuple(sum(1 for m in members if m[0] == name) for name in names) for members in dealt])
    unique = list({tuple(sorted(c)): c for c in candidates}.values())

    def total(vectors: Sequence[tuple]) -> tuple:
        used = ([sum(q * s[d] for q, s in zip(v, problem.sizes)) for d in range(3)] for v in vectors)
        return sum(yarn_cost(request, u) for u in used), len(vectors)

    steps = IMPROVE_STEPS // len(unique)
    return min((cheapest(request, problem, c, keep, steps) for c in unique), key=total)


def yarn_cost(request: Request, used: Sequence[int]) -> int:
    """What YARN grants a container whose instances use ``used`` (cpu, ram, disk): its memory and its
    vcores, each as a share of the largest container (so neither is bought with more of the other),
    times both caps to stay in integers (exact: the packing is the same on every run); nothing for an
    empty one."""
    if not any(used):
        return 0
    memory, vcores = granted(request.container_resources(Res(*used)), request.yarn_step_mb)
    return memory * max(1, request.cap.cpu) + 1000 * vcores * max(1, request.cap.ram)


def cheapest(request: Request, problem: CountProblem, solution: Sequence[tuple], keep: int = 0,
             steps: int = IMPROVE_STEPS) -> list[tuple]:
    """``solution`` with instances moved, or swapped two at a time, between its containers while that
    lowers what YARN grants the two (``yarn_cost``). Each pass takes the first change that lowers it,
    from the dearest container (then by index), component and destination in
    order; at most ``steps`` changes are weighed in all (counted, never timed). A container is
    emptied (and dropped) only while more than ``keep`` remain."""
    out = [list(v) for v in solution]
    used = [[sum(q * s[d] for q, s in zip(v, problem.sizes)) for d in range(3)] for v in out]
    costs = [yarn_cost(request, u) for u in used]
    kinds = range(len(problem.sizes))
    while steps > 0:
        change = None
        waste = sorted(range(len(out)), key=lambda i: (-costs[i], i))  # the dearest container first
        for i, j in ((i, j) for i in waste for j in range(len(out)) if j != i and any(out[j])):
            for t, u in itertools.product(kinds, (None, *kinds)):
                if not out[i][t] or (u is not None and (u == t or not out[j][u])):
                    continue
                steps -= 1
                src, dst = _exchanged(problem, used[i], used[j], t, u)
                if src is None or (not any(src) and sum(1 for v in out if any(v)) <= keep):
                    continue
                after = (yarn_cost(request, src), yarn_cost(request, dst))
                if sum(after) < costs[i] + costs[j]:
                    change = (i, j, t, u, src, dst, after)
                    break
                if steps <= 0:
                    break
            if change is not None or steps <= 0:
                break
        if change is None:
            break
        i, j, t, u, used[i], used[j], (costs[i], costs[j]) = change
        out[i][t] -= 1
        out[j][t] += 1
        if u is not None:
            out[j][u] -= 1
            out[i][u] += 1
    return [tuple(v) for v in out if any(v)]


def _exchanged(problem: CountProblem, src: Sequence[int], dst: Sequence[int], t: int, u: Optional[int]) -> tuple:
    """What the two containers use after one instance of component ``t`` goes from ``src`` to ``dst``
    (and, with ``u``, one of ``u`` comes back), or ``(None, None)`` if it does not fit."""
    back = problem.sizes[u] if u is not None else (0, 0, 0)
    size = problem.sizes[t]
    src = [a - s + b for a, s, b in zip(src, size, back)]
    dst = [a + s - b for a, s, b in zip(dst, size, back)]
    if any(x > r for x, r in zip(src, problem.room)) or any(x > r for x, r in zip(dst, problem.room)):
        return None, None
    return src, dst


def _deal(request: Request, problem: CountProblem, instances: Mapping[str, list], workers: int) -> Optional[list]:
    """Members of ``workers`` containers, instances dealt in turn largest first;
    None if that needs more containers."""
    dealt = Bins(request.room, request.sizes)
    for _ in range(workers):
        dealt.open()
    order = orderings(problem)[3]
    round_robin_fit(dealt, [(request.components[t].size, instances[request.components[t].name])
                            for t in order if problem.counts[t]])
    return dealt.members if len(dealt) == workers else None


def split(solution: Sequence[tuple], n: int) -> list:
    """Split the container with the most instances (the first of them) in two
    halves, component by component, until there are ``n`` containers."""
    out = [tuple(v) for v in solution]
    while len(out) < n:
        i = max(range(len(out)), key=lambda j: (sum(out[j]), -j))
        half, carry = [], 0
        for q in out[i]:  # alternate odd remainders so the halves differ by at most one instance
            h = (q + carry) // 2
            carry = (q + carry) % 2
            half.append(h)
        out[i:i + 1] = [tuple(q - h for q, h in zip(out[i], half)), tuple(half)]
    return out


def place(request: Request, bins: Bins, instances: Mapping[str, list], solution: Sequence[tuple],
          into: Sequence[int] = ()) -> None:
    """Give each container of ``solution`` its instances: the first count
    vectors go to the existing containers at indexes ``into``, the rest to new
    ones; each component's instances are handed out in the order given."""
    taken = [0] * len(request.components)
    for k, vector in enumerate(solution):
        if not any(vector):
            continue
        i = into[k] if k < len(into) else bins.open()
        for t, q in enumerate(vector):
            if q:
                name = request.components[t].name
                bins.add_all(i, instances[name][taken[t]:taken[t] + q])
                taken[t] += q


def place_into(request: Request, bins: Bins, instances: Mapping[str, list]) -> None:
    """Repacking: fill the gaps of the containers ``bins`` already has (first
    fit decreasing, trying each ordering and keeping the one that leaves the
    fewest new containers), then pack what is left into new containers."""
    problem = count_problem(request, instances)
    if not any(problem.counts):
        return
    best = None
    for order in orderings(problem):
        groups = [[bins.cpu[i], bins.ram[i], bins.disk[i], [0] * len(problem.sizes), 1] for i in range(len(bins))]
        groups, left = first_fit(problem, order, groups, open_new=False)
        new = fewest(problem.with_counts(left)) if any(left) else []
        if best is None or len(new) < len(best[1]):
            best = (groups, new)
    groups, new = best
    existing = [tuple(v[3][t] for t in range(len(problem.sizes))) for v in groups]
    place(request, bins, instances, existing + new, into=range(len(bins)))
