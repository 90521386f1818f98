"""A bounded exact search for a packing into fewer containers (bin completion).

Containers are filled one at a time. The next container always holds one
instance of the first component (in the given order) that has instances left
-- some container must -- and is filled with a *maximal* set of the remaining
instances: one that no remaining instance fits beside (a packing with a
non-maximal container can be turned into one with a maximal container by
moving instances in, so nothing is lost). Fullest fillings are tried first.
A branch is cut when the remaining instances need more containers than are
left (``lower_bound``) or when the same remaining counts already failed with
as many containers.

The search counts its steps and stops at ``budget``: the result is the same
on every machine and every run, whatever the machine's speed.
"""
from __future__ import annotations

from typing import Callable, Optional, Sequence

from squall.packing.counts import CountProblem, product_except, lower_bound


class _OutOfSteps(Exception):
    pass


class Search:
    """Looks for packings into fewer containers, within ``budget`` steps in all.

    ``fewer(target, order, steps)``: count vectors of a packing into at most
    ``target`` containers, or None. None with ``proven`` set means there is
    none; otherwise this try ran out of its ``steps``. What one try proves
    impossible (some remaining counts in so many containers) holds for every
    later try, whatever its order."""

    def __init__(self, problem: CountProblem, budget: int):
        self.problem = problem
        self.steps_left = budget
        self.proven = False
        self.order: list = []
        self._try_left = 0
        self._failed: dict = {}  # remaining counts -> most containers they failed with

    def fewer(self, target: int, order: Sequence[int], steps: int) -> Optional[list]:
        self.order = list(order)
        allowed = self._try_left = min(steps, self.steps_left)
        try:
            found = self._fill(list(self.problem.counts), target)
            self.proven = found is None
            return found
        except _OutOfSteps:
            self.proven = False
            return None
        finally:
            self.steps_left -= allowed - max(self._try_left, 0)

    def _step(self, cost: int) -> None:
        self._try_left -= cost
        if self._try_left < 0:
            raise _OutOfSteps

    def _fill(self, left: list, containers: int) -> Optional[list]:
        if not any(left):
            return []
        if containers <= 0:
            return None
        key = tuple(left)
        if self._failed.get(key, -1) >= containers:
            return None
        if lower_bound(self.problem.with_counts(left)) > containers:
            self._failed[key] = containers
            return None
        for take in self._fillings(left):
            self._step(1)
            rest = [n - q for n, q in zip(left, take)]
            found = self._fill(rest, containers - 1)
            if found is not None:
                return [take] + found
        self._failed[key] = containers
        return None

    def _fillings(self, left: list) -> list:
        return maximal_fillings(self.problem, left, self.order, self._step)


def maximal_fillings(problem: CountProblem, left: Sequence[int], order: Sequence[int],
                     step: Callable[[int], None]) -> list:
    """Every maximal filling (count vector) of one container holding an
    instance of the first component in ``order`` with instances ``left``,
    fullest first. ``step(cost)`` is charged for each node of the enumeration."""
    sizes, room = problem.sizes, problem.room
    first = next(t for t in order if left[t])
    types = [t for t in order if left[t]]
    take = [0] * len(left)
    take[first] = 1
    out = []

    def room_for(used: list, t: int) -> int:
        return min(left[t] - take[t], problem.per_container(used, t))

    def walk(i: int, used: list) -> None:
        step(1)
        if i == len(types):
            step(len(types))
            if all(room_for(used, t) <= 0 for t in types):
                out.append((tuple(take), used))
            return
        t = types[i]
        size = sizes[t]
        for q in range(room_for(used, t), -1, -1):
            take[t] += q
            walk(i + 1, [u + q * s for u, s in zip(used, size)])
            take[t] -= q

    walk(0, list(sizes[first]))
    # fullest first: the sum of the container's shares (cross-multiplied, exact); ties keep enumeration order
    weights = [product_except(room, d) if room[d] else 0 for d in range(len(room))]
    out.sort(key=lambda f: -sum(u * w for u, w in zip(f[1], weights)))
    return [f[0] for f in out]
