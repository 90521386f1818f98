"""The keyed exchange: does scale-out pay? Plain Python, fused 1/1/1 and 1/2/2 side by side.

    .venv/bin/python bench/exchange.py [--seconds 5] [--rounds 2] [--against REF] [--only SHAPE] [--cores N]

Each round runs, one after the other on this machine (every round has its own
baseline: figures here drift from one minute to the next):

- plain Python: ``Counter.update`` over the words of the same sentences, one
  process (the baseline of issue 30's table);
- the tuple API (``emit``/``process``): fused 1/1/1 (wc_bench_single.py, one
  chain in one process) and 1/2/2 (wc_bench.py: one sentence, two split, two
  count tasks; every word crosses processes to its count task by fields
  grouping), both under the default ``squall.chaining: auto``, each component
  requesting 0.3 cpu so that the 1/1/1's three fit one core and ``auto`` fuses
  them whole (at the default 0.5 it cuts after two: squall/chaining.py);
- the batch API (``emit_many``/``process_batch``): the same two shapes
  (wc_bench_batch.py, wc_bench_batch_wide.py);
- the columnar batch API (``emit_columns``/``batch.columns``, the count a
  ``Counter.update`` of a column): the same two shapes (wc_bench_columns.py,
  wc_bench_columns_wide.py);
- each of the four at most once and at least once (``topology.max.spout.pending``
  unlimited).

It prints words/s, CPU µs a word (every process of the topology), and the
ratios issue 30 sets targets for (median over rounds, each round against its
own runs): 1/2/2 / fused 1/1/1 per API, fused / plain Python, at least once /
at most once.

Beside each run it prints the words/s its processes' CPU allows
(``core_bound``): on this machine's cores, no more than the cores give all of
them, nor than its busiest process does on a core of its own; and with a core
for every process, the second alone, with the ratios again. It is how this
2-core machine says what a 1/2/2 run (five busy processes) would do where each
had a core. The bound on this machine's cores checks the figures it rests on
against what ran (``--cores 1`` runs everything on one core to check it
there too). Where it differs from a machine with the cores: each process's CPU
a word was measured while they took turns on two cores (cache and switches
shared: more CPU than on a core of its own), and it assumes the stages of the
pipeline overlap perfectly (a stage that waits for frames does less).

``--only SHAPE`` (repeatable, e.g. ``--only "tuple 1/2/2"``) runs just those shapes, at most and
at least once (plain Python always), and the ratios between what ran.

``--against REF`` runs every round twice, once on git revision REF's code
(``bench/revision.py``) and once on this tree, alternately, and prints both
and their ratio (this tree / REF).

At most once the instances' ``self.emit(values)`` is the compiled emit where it
was built (docs/runtime.md, "The compiled emit"); ``SQUALL_PURE_PYTHON=1`` in
this script's environment measures the pure Python one. ``bench/exchange_bound.py``
measures what two plain Python processes make of the same exchange.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections import Counter
from typing import Callable, Dict, List, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "topologies"))

import wordcount_e2e  # noqa: E402

TOPOLOGIES = os.path.join(HERE, "topologies")
PLAIN = "plain Python Counter.update"
AT_LEAST_ONCE = ("topology.reliability.mode=ATLEAST_ONCE", "topology.max.spout.pending=null")
SHAPES = {
    "tuple fused 1/1/1": "wc_bench_single.py",
    "tuple 1/2/2": "wc_bench.py",
    "batch fused 1/1/1": "wc_bench_batch.py",
    "batch 1/2/2": "wc_bench_batch_wide.py",
    "columns fused 1/1/1": "wc_bench_columns.py",
    "columns 1/2/2": "wc_bench_columns_wide.py",
}
RUNS: Dict[str, Tuple[str, ...]] = {}
FUSED = ("squall.chaining=auto", "squall.component.cpu=0.3")  # three components within one core: fused whole
for _shape, _file in SHAPES.items():
    RUNS[_shape] = (_file, *FUSED)
    RUNS[_shape + " ALO"] = (_file, *FUSED, *AT_LEAST_ONCE)
RATIOS = [  # (what, numerator, denominator, target)
    ("batch 1/2/2 / batch fused", "batch 1/2/2", "batch fused 1/1/1", ">= 1.2"),
    ("tuple 1/2/2 / tuple fused", "tuple 1/2/2", "tuple fused 1/1/1", ">= 1.3"),
    ("columns 1/2/2 / columns fused", "columns 1/2/2", "columns fused 1/1/1", ">= 1.2 (batch API)"),
    ("columns 1/2/2 / batch fused", "columns 1/2/2", "batch fused 1/1/1", ">= 1.2 (batch API)"),
    ("columns fused / plain Python", "columns fused 1/1/1", PLAIN, ""),
    ("batch fused / plain Python", "batch fused 1/1/1", PLAIN, "no lower than on main"),
    ("tuple fused / plain Python", "tuple fused 1/1/1", PLAIN, "no lower than on main"),
    *((f"{shape} at least once / at most once", shape + " ALO", shape, "no lower than on main") for shape in SHAPES),
]


def plain_python(seconds: float) -> float:
    """Words/s of ``Counter.update`` over the split sentences of the topologies' spout."""
    from wc_bench import sentence

    sentences = [sentence(i) for i in range(1000)]
    counts: Counter = Counter()
    words = 0
    start = time.perf_counter()
    deadline = start + seconds
    while time.perf_counter() < deadline:
        for s in sentences:
            split = s.split()
            counts.update(split)
            words += len(split)
    return words / (time.perf_counter() - start)


def selected(only: List[str]) -> Dict[str, Tuple[str, ...]]:
    """The runs of the shapes in ``only`` (all of them if it is empty); an unknown shape is refused."""
    unknown = [shape for shape in only if shape not in SHAPES]
    if unknown:
        raise SystemExit(f"--only {unknown[0]!r}: not a shape here; the shapes: {', '.join(SHAPES)}")
    return {name: run for name, run in RUNS.items() if not only or name.removesuffix(" ALO") in only}


Round = Tuple[Dict[str, float], Dict[str, float], Dict[str, float]]


def one_round(seconds: float, runs: Dict[str, Tuple[str, ...]]) -> Round:
    """({run: words/s}, {run: CPU µs a word, all processes}, {run: the busiest process's CPU µs a
    word}) of one round of ``runs``, with this process's ``squall``."""
    words = {PLAIN: plain_python(seconds)}
    cpu: Dict[str, float] = {}
    busiest: Dict[str, float] = {}
    for name, (file, *props) in runs.items():
        run = wordcount_e2e.run(seconds, 4.0, *props, topology=os.path.join(TOPOLOGIES, file))
        words[name] = run["words_per_sec"]
        cpu[name] = sum(run["cpu_us_per_word"].values())
        busiest[name] = max(us for _kind, us in run["process_cpu_us_per_word"])
    return words, cpu, busiest


def core_bound(cpu_us: float, busiest_us: float, cores: int) -> float:
    """Words/s the run's processes allow on ``cores`` cores (0: a core for each process), from their
    CPU a word: no more than the cores can give all of them (work), nor than the busiest one can do on
    a core of its own (the pipeline's slowest stage)."""
    bounds = [1e6 / busiest_us]
    if cores:
        bounds.append(cores * 1e6 / cpu_us)
    return min(bounds)


def ratio_line(rounds: List[Round], a: str, b: str, of: Callable[[Round, str], float] = lambda r, n: r[0][n]) -> str:
    rs = sorted(of(r, a) / of(r, b) for r in rounds)
    return f"{statistics.median(rs):.2f}x (rounds {rs[0]:.2f}x-{rs[-1]:.2f}x)"


def show(rounds: List[Round], label: str) -> None:
    cores = len(os.sched_getaffinity(0))
    print(f"\n{label}: words/s, median of {len(rounds)} rounds ({cores} cores); CPU µs a word (all processes);"
          f" words/s their CPU allows on {cores} cores and with a core a process (core_bound)")
    ran = rounds[0][0]
    for name in ran:
        words = statistics.median(r[0][name] for r in rounds)
        line = f"  {name:<28} {words / 1e3:>8,.0f}k"
        if name in RUNS:
            line += f"  {statistics.median(r[1][name] for r in rounds):6.2f} µs"
            for n in (cores, 0):
                line += f"  {statistics.median(core_bound(r[1][name], r[2][name], n) for r in rounds) / 1e3:>8,.0f}k"
        print(line)
    print("ratios (each round against its own runs), target:")
    for what, a, b, target in RATIOS:
        if a in ran and b in ran:
            print(f"  {what:<44} {ratio_line(rounds, a, b):<32} {target}")
    for shape in SHAPES:  # CPU a word drifts less than words/s where the cores are shared with other tenants
        if shape in ran and shape + " ALO" in ran:
            rs = sorted(r[1][shape] / r[1][shape + " ALO"] for r in rounds)
            print(f"  {shape + ' CPU a word, at most / at least once':<44} {statistics.median(rs):.2f}x "
                  f"(rounds {rs[0]:.2f}x-{rs[-1]:.2f}x)")
    print("the same, with a core a process (core_bound: the CPU a word each process spent here):")
    for what, a, b, target in RATIOS:
        if a in RUNS and b in RUNS and a in ran and b in ran:
            print(f"  {what:<44} {ratio_line(rounds, a, b, lambda r, n: core_bound(r[1][n], r[2][n], 0)):<32} {target}")


def against(ref: str, rounds: int, seconds: float, only: List[str]) -> None:
    """Rounds on REF's code and on this tree's, alternately, each in its own process."""
    import revision

    runs: Dict[str, list] = {"ref": [], "this": []}
    ref_env = revision.env_for(ref)
    for r in range(rounds):
        for which, env in (("ref", ref_env), ("this", None)):
            done = subprocess.run([sys.executable, os.path.abspath(__file__), "--seconds", str(seconds), "--json",
                                   *(a for shape in only for a in ("--only", shape))],
                                  env=env, capture_output=True, text=True, check=True)
            runs[which].append(json.loads(done.stdout.splitlines()[-1]))
        print(f"round {r + 1} done", flush=True)
    show(runs["ref"], ref)
    show(runs["this"], "this tree")
    print(f"\nthis tree / {ref}, words/s (medians):")
    for name in selected(only):
        old = statistics.median(r[0][name] for r in runs["ref"])
        new = statistics.median(r[0][name] for r in runs["this"])
        print(f"  {name:<28} {new / old:.2f}x")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--against", metavar="REF", help="compare with git revision REF (e.g. 608d2f9)")
    p.add_argument("--only", action="append", default=[], metavar="SHAPE",
                   help=f"run only this shape (repeatable): {', '.join(SHAPES)}")
    p.add_argument("--cores", type=int, metavar="N",
                   help="run everything on N of the machine's cores (the bound on N cores against what runs there)")
    p.add_argument("--json", action="store_true", help=argparse.SUPPRESS)  # one round's figures (--against)
    args = p.parse_args()
    if args.cores:
        os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[:args.cores])  # the topologies' processes inherit it
    runs = selected(args.only)
    if args.json:
        print(json.dumps(one_round(args.seconds, runs)))
        return
    if args.against:
        against(args.against, args.rounds, args.seconds, args.only)
        return
    rounds = []
    for r in range(args.rounds):
        rounds.append(one_round(args.seconds, runs))
        print(f"round {r + 1}: " + ", ".join(f"{name} {v / 1e3:,.0f}k" for name, v in rounds[-1][0].items()),
              flush=True)
    show(rounds, "this tree")


if __name__ == "__main__":
    main()
