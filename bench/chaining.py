"""Chaining: the same word count chained, unchained, and as plain single-process Python, side by side.

    .venv/bin/python bench/chaining.py [--seconds 6] [--rounds 3] [--against REF]
    .venv/bin/python bench/chaining.py --rule [--seconds 6] [--rounds 2]

Each round runs, one after the other on this machine (figures drift from one
second to the next here, so every round has its own baseline):

- plain Python: the same word count as plain Python calls in one process (the
  spout's, split's and count's work as functions called for each tuple, with
  the same values), the baseline of the targets; and the tightest loop (no call
  and no values list a word) for reference;
- unchained, today's shape: bench/topologies/wc_bench.py (1 sentence, 2 split,
  2 count tasks; ``squall.chaining: off``): one process per task;
- unchained, one task each: wc_bench_single.py with ``squall.chaining: off``;
- chained, one task each: wc_bench_single.py with ``squall.chaining: auto`` and
  0.3 cpu a component (within one core together, so ``auto`` fuses all three):
  sentence -> split -> count in one process;
- chained, two of each: wc_bench_pairs.py with ``squall.chaining: auto``: two
  sentence -> split chains, two count processes (fields grouping);
- at least once, chained one task each (``topology.max.spout.pending`` unlimited);
- the same word count written with the batch API (wc_bench_batch.py: ``emit_many``
  and ``process_batch``), unchained, chained, and chained at least once.

It prints words/s for each, and the ratios the chaining issue sets targets for
(median over rounds): chained / plain Python, chained / unchained (today's shape),
and chained at least once / at most once.

``--against REF`` runs every round twice, once on git revision REF's code
(``bench/revision.py``: every process of the topology imports it) and once on
this tree, alternately, and prints for each run its median words/s and CPU
µs a word on both, and the ratio (this tree / REF).

``--rule`` measures what ``squall.chaining: auto`` chooses between (docs/runtime.md,
Chaining): the 1/1/1 word count, tuple and batch API, fused whole (each component
requesting 0.3 cpu: 0.9 together, one chain), as ``auto`` cuts it at the default
requests (0.5 cpu each: sentence+split fused, count in a process of its own) and
pipelined (``squall.chaining: off``: one process a task), each on free cores
(words/s) and on a busy machine (as many spinning processes as cores beside it:
words/s and CPU µs a word, every process of the topology). Ratios are against
pipelined in the same round.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Iterator

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "topologies"))

import wordcount_e2e  # noqa: E402

TOPOLOGIES = os.path.join(HERE, "topologies")
FUSED = "squall.component.cpu=0.3"  # three components within one core: auto fuses them (squall/chaining.py)
RUNS = {
    "unchained (1,2,2)": ("wc_bench.py", "squall.chaining=off"),
    "unchained (1,1,1)": ("wc_bench_single.py", "squall.chaining=off"),
    "chained (1,1,1)": ("wc_bench_single.py", "squall.chaining=auto", FUSED),
    "chained (2,2,2)": ("wc_bench_pairs.py", "squall.chaining=auto"),
    "chained (1,1,1) at least once": ("wc_bench_single.py", "squall.chaining=auto", FUSED,
                                      "topology.reliability.mode=ATLEAST_ONCE", "topology.max.spout.pending=null"),
    "batch API unchained (1,1,1)": ("wc_bench_batch.py", "squall.chaining=off"),
    "batch API chained (1,1,1)": ("wc_bench_batch.py", "squall.chaining=auto", FUSED),
    "batch API chained at least once": ("wc_bench_batch.py", "squall.chaining=auto", FUSED,
                                        "topology.reliability.mode=ATLEAST_ONCE", "topology.max.spout.pending=null"),
}

SHAPES = {  # what the chaining rule chooses between, at 1/1/1
    "fused (0.3 cpu each)": (FUSED,),
    "auto (0.5 cpu each: 2+1)": (),
    "pipelined (off)": ("squall.chaining=off",),
}
APIS = {"tuple": "wc_bench_single.py", "batch": "wc_bench_batch.py"}


def plain_python(seconds: float) -> float:
    """Words/s of the same word count as plain Python calls in this process: the spout's work (100
    sentences a burst, each with the burst's time), then split and count as functions called for
    each tuple with the values the topology's components get (bench/topologies/wc_bench.py)."""
    from wc_bench import sentence

    sentences = [sentence(i) for i in range(1000)]
    counts: dict = {}
    last = [None]
    samples: list = []

    def count(values: list) -> None:
        word, stamp = values
        counts[word] = counts.get(word, 0) + 1
        if stamp != last[0]:
            last[0] = stamp
            now = time.time()
            samples.append((now, now - stamp))

    def split(values: list) -> None:
        t = values[1]
        for word in values[0].split():
            count([word, t])

    i = 0
    start = time.perf_counter()
    deadline = start + seconds
    while time.perf_counter() < deadline:
        now = time.time()
        for _ in range(100):
            split([sentences[i % 1000], now])
            i += 1
    return sum(counts.values()) / (time.perf_counter() - start)


def tight_loop(seconds: float) -> float:
    """Words/s of the word count as the tightest plain loop (no call, no values list a word): for
    reference, what Python itself allows."""
    from wc_bench import sentence

    sentences = [sentence(i) for i in range(1000)]
    counts: dict = {}
    start = time.perf_counter()
    deadline = start + seconds
    while time.perf_counter() < deadline:
        for s in sentences:
            for word in s.split():
                counts[word] = counts.get(word, 0) + 1
    return sum(counts.values()) / (time.perf_counter() - start)


def one_round(seconds: float) -> tuple:
    """({run: words/s}, {run: CPU µs a word}) of one round, with this process's ``squall``."""
    results = {"plain Python": plain_python(seconds), "tight loop": tight_loop(seconds)}
    cpu = {}
    for name, (file, *props) in RUNS.items():
        run = wordcount_e2e.run(seconds, 4.0, *props, topology=os.path.join(TOPOLOGIES, file))
        results[name] = run["words_per_sec"]
        cpu[name] = sum(run["cpu_us_per_word"].values())
    return results, cpu


def against(ref: str, rounds: int, seconds: float) -> None:
    """Rounds on REF's code and on this tree's, alternately, each in its own process."""
    import revision

    runs: dict = {"ref": [], "this": []}
    ref_env = revision.env_for(ref)
    for r in range(rounds):
        for which, env in (("ref", ref_env), ("this", None)):
            done = subprocess.run([sys.executable, os.path.abspath(__file__), "--seconds", str(seconds), "--json"],
                                  env=env, capture_output=True, text=True, check=True)
            runs[which].append(json.loads(done.stdout.splitlines()[-1]))
        print(f"round {r + 1} done", flush=True)
    print(f"\nwords/s and CPU µs a word (all processes), median of {rounds} rounds: {ref} | this tree | ratio")
    for name in ["plain Python", "tight loop", *RUNS]:
        old = statistics.median(run[0][name] for run in runs["ref"])
        new = statistics.median(run[0][name] for run in runs["this"])
        line = f"  {name:<32} {old / 1e3:>7,.0f}k | {new / 1e3:>7,.0f}k | {new / old:.2f}x"
        if name in RUNS:
            old_cpu = statistics.median(run[1][name] for run in runs["ref"])
            new_cpu = statistics.median(run[1][name] for run in runs["this"])
            line += f"   cpu {old_cpu:6.2f} | {new_cpu:6.2f} µs | {new_cpu / old_cpu:.2f}x"
        print(line)


@contextlib.contextmanager
def busy(processes: int) -> Iterator[None]:
    """``processes`` spinning Python processes for the duration: a cluster whose cores are taken."""
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(processes)]
    try:
        yield
    finally:
        for p in spinners:
            p.kill()
            p.wait()


def rule(rounds: int, seconds: float) -> None:
    """Fused, auto and pipelined, tuple and batch API, on free cores and on a busy machine."""
    words: dict = {}
    cpu: dict = {}
    for r in range(rounds):
        for load, spinners in (("free", 0), ("busy", os.cpu_count() or 1)):
            for api, file in APIS.items():
                for shape, props in SHAPES.items():
                    with busy(spinners):
                        run = wordcount_e2e.run(seconds, 4.0, *props, topology=os.path.join(TOPOLOGIES, file))
                    key = (load, api, shape)
                    words.setdefault(key, []).append(run["words_per_sec"])
                    cpu.setdefault(key, []).append(sum(run["cpu_us_per_word"].values()))
        print(f"round {r + 1} done", flush=True)
    print(f"\nwords/s and CPU µs a word (every process), median of {rounds} rounds ({os.cpu_count()} cores; busy: "
          f"{os.cpu_count()} spinning processes beside it); x: words/s against pipelined in the same round")
    for (load, api, shape), values in words.items():
        base = words[load, api, "pipelined (off)"]
        ratios = sorted(w / b for w, b in zip(values, base))
        print(f"  {load:<5} {api:<6} {shape:<26} {statistics.median(values) / 1e3:>8,.0f}k "
              f"{statistics.median(cpu[load, api, shape]):>6.2f} µs  {statistics.median(ratios):.2f}x "
              f"({ratios[0]:.2f}-{ratios[-1]:.2f})")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=6.0)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--against", metavar="REF", help="compare with git revision REF (e.g. faad9f0)")
    p.add_argument("--rule", action="store_true", help="fused, auto and pipelined on free and busy cores")
    p.add_argument("--json", action="store_true", help=argparse.SUPPRESS)  # one round's figures (--against)
    args = p.parse_args()
    if args.json:
        print(json.dumps(one_round(args.seconds)))
        return
    if args.against:
        against(args.against, args.rounds, args.seconds)
        return
    if args.rule:
        rule(args.rounds, args.seconds)
        return
    results: dict = {name: [] for name in ["plain Python", "tight loop", *RUNS]}
    cpu: dict = {name: [] for name in RUNS}  # µs of CPU a word, every process of the topology
    for r in range(args.rounds):
        words, used = one_round(args.seconds)
        for name, value in words.items():
            results[name].append(value)
        for name, value in used.items():
            cpu[name].append(value)
        print(f"round {r + 1}: " + ", ".join(f"{name} {v[-1] / 1e3:,.0f}k" for name, v in results.items()))
    med = {name: statistics.median(v) for name, v in results.items()}

    def ratio(a: str, b: str) -> str:
        rs = sorted(x / y for x, y in zip(results[a], results[b]))
        return f"{statistics.median(rs):.2f}x (rounds {rs[0]:.2f}x-{rs[-1]:.2f}x)"

    print(f"\nwords/s, median of {args.rounds} rounds ({os.cpu_count()} cores), and CPU µs a word (all processes):")
    for name, value in med.items():
        used = f"{statistics.median(cpu[name]):>6.2f} µs" if name in cpu else ""
        print(f"  {name:<32} {value / 1e3:>8,.0f}k  {used}")
    print("ratios (each round against its own runs):")
    print(f"  chained (1,1,1) / plain Python:             {ratio('chained (1,1,1)', 'plain Python')}")
    print(f"  chained (2,2,2) / plain Python:             {ratio('chained (2,2,2)', 'plain Python')}")
    print(f"  chained (1,1,1) / tight loop:               {ratio('chained (1,1,1)', 'tight loop')}")
    print(f"  chained (1,1,1) / unchained (1,2,2):        {ratio('chained (1,1,1)', 'unchained (1,2,2)')}")
    print(f"  chained (2,2,2) / unchained (1,2,2):        {ratio('chained (2,2,2)', 'unchained (1,2,2)')}")
    print(f"  chained (1,1,1) / unchained (1,1,1):        {ratio('chained (1,1,1)', 'unchained (1,1,1)')}")
    print(f"  chained at least once / at most once (1,1,1): "
          f"{ratio('chained (1,1,1) at least once', 'chained (1,1,1)')}")
    print(f"  batch API chained / plain Python:           {ratio('batch API chained (1,1,1)', 'plain Python')}")
    print(f"  batch API chained / unchained (1,2,2):      {ratio('batch API chained (1,1,1)', 'unchained (1,2,2)')}")
    print(f"  batch API chained / batch API unchained:    "
          f"{ratio('batch API chained (1,1,1)', 'batch API unchained (1,1,1)')}")
    print(f"  batch API chained at least once / at most once: "
          f"{ratio('batch API chained at least once', 'batch API chained (1,1,1)')}")


if __name__ == "__main__":
    main()
