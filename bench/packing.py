"""Packing throughput: instances/s for 1k, 10k and 100k instances over 50
components, for every algorithm x granularity, against sorting the same
instance list in the same run (the ratio is the figure to compare across
machines). Each figure is the best of a few runs of the whole ``pack()``:
config resolution, placement, building the Thrift plan and validating it.

    .venv/bin/python bench/packing.py [--sizes 1000,10000,100000] [--repeat 3]
"""
from __future__ import annotations

import argparse
import json
import time

from squall.idl import schema
from squall.packing import PackingError, pack

COMPONENTS = 50


def topology(instances: int):
    """50 components of 4 CPU and 7 memory sizes in a chain; ``topology.workers``
    sized so round-robin fits (about 10 instances per container)."""
    per = instances // COMPONENTS
    components = []
    for k in range(COMPONENTS):
        config = {
            "squall.component.cpu": 0.25 * (1 + k % 4),
            "squall.component.ram.mb": 128 * (1 + k % 7),
            "squall.component.disk.mb": 64,
        }
        inputs = [] if k == 0 else [
            schema.InputStream(component=f"c{k - 1:02d}", stream="default", grouping=schema.GroupingKind.SHUFFLE, fields=[])
        ]
        components.append(schema.Component(
            name=f"c{k:02d}", kind=schema.ComponentKind.SPOUT if k == 0 else schema.ComponentKind.BOLT,
            class_name="bench:Component", parallelism=per, outputs=[], inputs=inputs,
            config={key: json.dumps(v) for key, v in config.items()},
        ))
    config = {
        "topology.workers": max(1, instances // 10),
        "squall.container.max.cpu": 16, "squall.container.max.ram.mb": 16384,
        "squall.worker.cpu": 16, "squall.worker.ram.mb": 16384, "squall.worker.disk.mb": 4096,
    }
    return schema.Topology(name="bench", components=components,
                           config={k: json.dumps(v) for k, v in config.items()}, overrides={})


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"{'instances':>9}  {'algorithm':<10} {'gran':<6} {'containers':>10} {'seconds':>8} "
          f"{'instances/s':>12} {'x sort':>7}")
    for n in (int(s) for s in args.sizes.split(",")):
        t = topology(n)
        # the baseline: sorting the same instance list (component, task id, index) by size
        sizes = {c.name: (json.loads(c.config["squall.component.ram.mb"]), json.loads(c.config["squall.component.cpu"]))
                 for c in t.components}
        items = [(c.name, 1 + k * c.parallelism + i, i) for k, c in enumerate(t.components) for i in range(c.parallelism)]
        items.reverse()
        sort_time = best(lambda: sorted(items, key=lambda m: (-sizes[m[0]][0], -sizes[m[0]][1], m[0], m[2])), args.repeat)
        print(f"{n:>9}  {'(sort)':<10} {'':<6} {'':>10} {sort_time:>8.4f} {n / sort_time:>12,.0f} {1:>7.1f}")
        for granularity in ("task", "worker"):
            for algorithm in ("roundrobin", "rcrr", "ffd"):
                try:
                    plan = pack(t, algorithm=algorithm, granularity=granularity)
                except PackingError as e:
                    print(f"{n:>9}  {algorithm:<10} {granularity:<6} infeasible: {e}")
                    continue
                seconds = best(lambda: pack(t, algorithm=algorithm, granularity=granularity), args.repeat)
                print(f"{n:>9}  {algorithm:<10} {granularity:<6} {len(plan.containers):>10} {seconds:>8.4f} "
                      f"{n / seconds:>12,.0f} {seconds / sort_time:>7.1f}")


if __name__ == "__main__":
    main()
