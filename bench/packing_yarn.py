"""What YARN grants each packing policy: auto's YARN objective (issue 27, item 5) against ffd, rcrr and
round-robin, on the random topologies of ``bench/packing.py`` (seeded).

For each topology and policy: YARN memory (container memory rounded up to
``squall.yarn.min.allocation.mb``), vcores (whole cores), containers, and the time of the whole
``pack()`` (cpu time of this process: the machine is shared); totals over the topologies every policy packs, and the ratio of each total to auto's, all
from one invocation.

    .venv/bin/python bench/packing_yarn.py [--topologies 100] [--seed 0]
"""
from __future__ import annotations

import argparse
import os
import sys
import time

from squall.conf import base_config
from squall.packing import PackingError, pack
from squall.packing.resources import Res
from squall.packing.yarn import granted

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from packing import random_topology  # noqa: E402

POLICIES = ("auto", "ffd", "rcrr", "roundrobin")


def grants(topology: object, algorithm: str) -> tuple:
    """``(memory_mb, vcores, containers, seconds)`` of ``algorithm``'s plan, or None if it cannot pack."""
    start = time.process_time()
    try:
        plan = pack(topology, base_config(), algorithm=algorithm)
    except PackingError:
        return None
    seconds = time.process_time() - start
    step = base_config()["squall.yarn.min.allocation.mb"]  # the caps here may exceed YARN's maximum: not checked
    shapes = [granted(Res.from_thrift(c.resources), step) for c in plan.containers]
    return sum(m for m, _ in shapes), sum(v for _, v in shapes), len(plan.containers), seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topologies", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    totals = {p: [0, 0, 0, 0.0] for p in POLICIES}
    worse = {p: 0 for p in POLICIES}  # topologies where auto is granted more memory than p
    counted = 0
    for seed in range(args.seed, args.seed + args.topologies):
        topology = random_topology(seed)
        rows = {p: grants(topology, p) for p in POLICIES}
        if any(r is None for r in rows.values()):
            continue
        counted += 1
        for p, row in rows.items():
            totals[p] = [a + b for a, b in zip(totals[p], row)]
            worse[p] += rows["auto"][0] > row[0]
    print(f"{counted} topologies (seeds {args.seed}-{args.seed + args.topologies - 1}) every policy packs")
    print("| policy | YARN memory MiB | / auto | vcores | / auto | containers | topologies where auto gets more memory "
          "| pack() cpu s |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    base = totals["auto"]
    for p in POLICIES:
        memory, vcores, containers, seconds = totals[p]
        print(f"| {p} | {memory:,} | {memory / base[0]:.3f} | {vcores:,} | {vcores / base[1]:.3f} | {containers:,} "
              f"| {worse[p] if p != 'auto' else '-'} | {seconds:.2f} |")


if __name__ == "__main__":
    main()
