"""Packing quality and throughput.

Quality: over random seeded topologies (2-8 components, each cpu-heavy or
memory-heavy, parallelism 1-8, container caps of 4-8 cores and 8-16 GiB,
padding by the daemons or by a percentage), the total containers of ``auto``,
``ffd`` (Heron's first-fit decreasing, ram first), ``rcrr`` and the optimum
found by OR-Tools CP-SAT (``pip install 'squall[solver]'``): its best bound and
the gap when it does not prove optimality within its time limit.

Throughput: instances/s for 1k, 10k and 100k instances over 50 components,
for every algorithm x granularity, against sorting the same instance list in
the same run (the ratio is the figure to compare across machines). Each figure
is the best of a few runs of the whole ``pack()``: config resolution,
placement, building the Thrift plan and validating it.

    .venv/bin/python bench/packing.py [--topologies 100] [--seed 0] [--solver-seconds 30] [--scale 1]
                                      [--sizes 1000,10000,100000] [--repeat 3] [--skip-quality|--skip-throughput]
"""
from __future__ import annotations

import argparse
import json
import math
import random
import time

from squall.idl import schema
from squall.packing import PackingError, pack
from squall.packing.request import build_request

COMPONENTS = 50


def _component(name: str, parallelism: int, config: dict, upstream: list) -> object:
    inputs = [schema.InputStream(component=u, stream="default", grouping=schema.GroupingKind.SHUFFLE, fields=[])
              for u in upstream]
    return schema.Component(
        name=name, kind=schema.ComponentKind.BOLT if upstream else schema.ComponentKind.SPOUT,
        class_name="bench:Component", parallelism=parallelism, outputs=[], inputs=inputs,
        config={key: json.dumps(v) for key, v in config.items()},
    )


def _topology(name: str, components: list, config: dict) -> object:
    return schema.Topology(name=name, components=components,
                           config={k: json.dumps(v) for k, v in config.items()}, overrides={})


# ------------------------------------------------------------------- quality


def random_topology(seed: int, scale: int = 1) -> object:
    """One random topology; every instance fits a container alone. ``scale``
    multiplies every component's parallelism."""
    rng = random.Random(seed)
    config = {
        "squall.container.max.cpu": rng.choice([4, 6, 8]),
        "squall.container.max.ram.mb": rng.choice([8192, 12288, 16384]),
        "squall.packing.padding.percentage": rng.choice([None, None, 5, 10, 20]),
    }
    components = []
    for k in range(rng.randint(2, 8)):
        cpu = rng.randint(2, 60) * 0.05  # 0.1 .. 3 cores
        ram = rng.randint(1, 48) * 128  # 128 MiB .. 6 GiB
        if rng.random() < 0.5:  # cpu-heavy: a quarter of the memory
            ram = max(128, ram // 4 // 128 * 128)
        else:  # memory-heavy: a quarter of the cpu
            cpu = max(0.05, round(cpu / 4 / 0.05) * 0.05)
        size = {"squall.component.cpu": round(cpu, 2), "squall.component.ram.mb": ram,
                "squall.component.disk.mb": rng.choice([256, 256, 512, 1024])}
        upstream = [f"c{rng.randrange(k)}"] if k else []
        components.append(_component(f"c{k}", rng.randint(1, 8) * scale, size, upstream))
    return _topology(f"random{seed}", components, config)


def optimum(topology: object, upper: int, seconds: float) -> tuple:
    """``(best containers found, proven lower bound)`` by CP-SAT: x[b][c] instances
    of component c in container b, at most ``upper`` containers."""
    from ortools.sat.python import cp_model

    request = build_request(topology, algorithm="ffd", granularity="task")
    room = request.room
    comps = request.components
    model = cp_model.CpModel()
    used = [model.NewBoolVar(f"used{b}") for b in range(upper)]
    x = [[model.NewIntVar(0, c.parallelism, f"x{b}_{c.name}") for c in comps] for b in range(upper)]
    for j, c in enumerate(comps):
        model.Add(sum(x[b][j] for b in range(upper)) == c.parallelism)
    for b in range(upper):
        for dim in ("cpu", "ram", "disk"):
            model.Add(sum(x[b][j] * getattr(c.size, dim) for j, c in enumerate(comps))
                      <= getattr(room, dim) * used[b])
        if b:
            model.Add(used[b] <= used[b - 1])
    model.Minimize(sum(used))
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = seconds
    solver.parameters.num_workers = 2
    solver.Solve(model)
    return int(round(solver.ObjectiveValue())), int(math.ceil(solver.BestObjectiveBound() - 1e-6))


def quality(seeds: range, seconds: float, scale: int) -> None:
    totals = {"auto": 0, "ffd": 0, "rcrr": 0, "optimum": 0, "bound": 0}
    worst = (0.0, None)
    worse_than_ffd, unproven, solver_time, auto_time = [], 0, 0.0, 0.0
    for seed in seeds:
        t = random_topology(seed, scale)
        start = time.perf_counter()
        counts = {"auto": len(pack(t, algorithm="auto").containers)}
        auto_time += time.perf_counter() - start
        for algorithm in ("ffd", "rcrr"):
            counts[algorithm] = len(pack(t, algorithm=algorithm).containers)
        start = time.perf_counter()
        best, bound = optimum(t, counts["auto"], seconds)
        solver_time += time.perf_counter() - start
        counts["optimum"], counts["bound"] = best, bound
        unproven += best > bound
        for key, value in counts.items():
            totals[key] += value
        ratio = counts["auto"] / bound
        if ratio > worst[0]:
            worst = (ratio, seed, counts["auto"], bound)
        if counts["auto"] > counts["ffd"]:
            worse_than_ffd.append(seed)
    n = len(seeds)
    print(f"quality: {n} random topologies (seeds {seeds.start}..{seeds.stop - 1}, parallelism x{scale}), "
          "task granularity")
    print(f"{'algorithm':<22} {'containers':>10} {'/ CP-SAT best':>13} {'/ CP-SAT bound':>14}")
    for key, label in (("auto", "auto"), ("ffd", "ffd (Heron, ram first)"), ("rcrr", "rcrr"),
                       ("optimum", "CP-SAT best found"), ("bound", "CP-SAT lower bound")):
        print(f"{label:<22} {totals[key]:>10} {totals[key] / totals['optimum']:>13.4f} "
              f"{totals[key] / totals['bound']:>14.4f}")
    print(f"optimum proven on {n - unproven} of {n} (CP-SAT best = bound); gap between best found and bound: "
          f"{totals['optimum'] - totals['bound']} containers")
    print(f"worst single topology: auto / CP-SAT lower bound {worst[0]:.3f} (seed {worst[1]}: {worst[2]} vs {worst[3]})")
    print(f"topologies where auto > ffd: {len(worse_than_ffd)} {worse_than_ffd if worse_than_ffd else ''}")
    print(f"time: auto {auto_time / n * 1000:.1f} ms per topology (whole pack), CP-SAT {solver_time / n:.2f} s")
    print()


# ---------------------------------------------------------------- throughput


def chain_topology(instances: int, workers: bool) -> object:
    """50 components of 4 CPU and 7 memory sizes in a chain. With ``workers``,
    ``topology.workers`` is sized so round-robin fits (about 10 instances per
    container); auto and ffd run without it (as many containers as needed)."""
    per = instances // COMPONENTS
    components = []
    for k in range(COMPONENTS):
        config = {
            "squall.component.cpu": 0.25 * (1 + k % 4),
            "squall.component.ram.mb": 128 * (1 + k % 7),
            "squall.component.disk.mb": 64,
        }
        components.append(_component(f"c{k:02d}", per, config, [f"c{k - 1:02d}"] if k else []))
    config = {
        "squall.container.max.cpu": 16, "squall.container.max.ram.mb": 16384,
        "squall.worker.cpu": 16, "squall.worker.ram.mb": 16384, "squall.worker.disk.mb": 4096,
    }
    if workers:
        config["topology.workers"] = max(1, instances // 10)
    return _topology("bench", components, config)


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def throughput(sizes: list, repeat: int) -> None:
    print(f"{'instances':>9}  {'algorithm':<10} {'gran':<6} {'containers':>10} {'seconds':>8} "
          f"{'instances/s':>12} {'x sort':>7}")
    for n in sizes:
        with_workers, without = chain_topology(n, True), chain_topology(n, False)
        # the baseline: sorting the same instance list (component, task id, index) by size
        sizes_of = {c.name: (json.loads(c.config["squall.component.ram.mb"]), json.loads(c.config["squall.component.cpu"]))
                    for c in without.components}
        items = [(c.name, 1 + k * c.parallelism + i, i) for k, c in enumerate(without.components)
                 for i in range(c.parallelism)]
        items.reverse()
        sort_time = best(lambda: sorted(items, key=lambda m: (-sizes_of[m[0]][0], -sizes_of[m[0]][1], m[0], m[2])),
                         repeat)
        print(f"{n:>9}  {'(sort)':<10} {'':<6} {'':>10} {sort_time:>8.4f} {n / sort_time:>12,.0f} {1:>7.1f}")
        for granularity in ("task", "worker"):
            for algorithm in ("auto", "roundrobin", "rcrr", "ffd"):
                t = with_workers if algorithm in ("roundrobin", "rcrr") else without
                try:
                    plan = pack(t, algorithm=algorithm, granularity=granularity)
                except PackingError as e:
                    print(f"{n:>9}  {algorithm:<10} {granularity:<6} infeasible: {e}")
                    continue
                seconds = best(lambda: pack(t, algorithm=algorithm, granularity=granularity), repeat)
                print(f"{n:>9}  {algorithm:<10} {granularity:<6} {len(plan.containers):>10} {seconds:>8.4f} "
                      f"{n / seconds:>12,.0f} {seconds / sort_time:>7.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topologies", type=int, default=100, help="random topologies for the quality figures")
    parser.add_argument("--seed", type=int, default=0, help="first seed")
    parser.add_argument("--solver-seconds", type=float, default=30.0, help="CP-SAT's time limit per topology")
    parser.add_argument("--scale", type=int, default=1, help="multiply every component's parallelism")
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip-quality", action="store_true")
    parser.add_argument("--skip-throughput", action="store_true")
    args = parser.parse_args()
    if not args.skip_quality:
        quality(range(args.seed, args.seed + args.topologies), args.solver_seconds, args.scale)
    if not args.skip_throughput:
        throughput([int(s) for s in args.sizes.split(",")], args.repeat)


if __name__ == "__main__":
    main()
