"""``auto`` minimises what YARN grants (memory rounded up to the minimum allocation, whole vcores, each as a
share of the largest container), not only the container count: on a heterogeneous topology it is no worse
than round-robin and better than the fewest-containers packing it starts from."""
from __future__ import annotations

import itertools

from packing_helpers import comp, topo, yarn_cost

from squall.conf import base_config
from squall.packing import pack, validate_plan, yarn_shapes


def granted(plan) -> tuple:
    shapes = yarn_shapes(plan, base_config(), max_shapes=None)
    return (sum(m for m, _ in shapes.by_container.values()), sum(v for _, v in shapes.by_container.values()),
            len(plan.containers))


HETEROGENEOUS = topo([comp("s", 4, cpu=0.5, ram=512), comp("m", 10, cpu=0.25, ram=2000, inputs=["s"]),
                      comp("k", 3, cpu=1.5, ram=256, inputs=["m"])])


def test_auto_grants_least_yarn_memory_on_a_heterogeneous_topology() -> None:
    base = base_config()
    by = {alg: pack(HETEROGENEOUS, base, algorithm=alg) for alg in ("auto", "roundrobin", "ffd", "rcrr")}
    # the fewest containers (ffd, and auto before) leave containers just past a 1,024 MiB step
    assert granted(by["ffd"]) == (25600, 13, 4)
    assert granted(by["roundrobin"]) == (24576, 12, 4)
    assert granted(by["auto"]) == (24576, 12, 4)  # 23,712 MiB asked: 24 steps is the least there is
    assert sum(c.resources.ram_mb for c in by["auto"].containers) == 23712
    validate_plan(HETEROGENEOUS, by["auto"], base)


def test_auto_never_costs_yarn_more_than_the_other_policies() -> None:
    base = base_config()
    sizes = [(0.5, 512), (0.25, 2000), (1.5, 256), (0.3, 1400), (1.2, 200), (0.7, 900)]
    for (a, b), (pa, pb) in itertools.product(itertools.combinations(sizes, 2), [(3, 7), (6, 2), (9, 9)]):
        t = topo([comp("a", pa, cpu=a[0], ram=a[1]), comp("b", pb, cpu=b[0], ram=b[1], inputs=["a"])])
        mine = yarn_cost(t, pack(t, base, algorithm="auto"))
        for other in ("roundrobin", "ffd", "rcrr"):
            assert mine <= yarn_cost(t, pack(t, base, algorithm=other)), (a, b, pa, pb, other)
