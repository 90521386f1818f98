"""Map-side combining: the word count at 1/2/2 (fields grouping across processes) with and without a
combiner on the count bolt, tuple and batch API, side by side.

    .venv/bin/python bench/combine.py [--seconds 6] [--rounds 3]

Each round runs, one after the other, bench/topologies/wc_bench_combine*.py on the local cluster
(bench/wordcount_e2e.py: warm up, measure, kill): split emits ``[word, 1, t]``, count adds the ones up;
with ``combine`` each split task sends one partial per word per batch. At most once, tuple and batch
API, and at least once (``topology.max.spout.pending`` unlimited), tuple API. It prints words/s, the
tuples that crossed the exchange into count per word counted, and the ratios combined / not combined
and at least once / at most once (median over rounds, each round against its own runs).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "topologies"))

import wordcount_e2e  # noqa: E402

TOPOLOGIES = os.path.join(HERE, "topologies")
AT_LEAST_ONCE = ("topology.reliability.mode=ATLEAST_ONCE", "topology.max.spout.pending=null")
RUNS = {  # name: (topology file, config properties)
    "tuple API": ("wc_bench_combine_off.py",),
    "tuple API, combined": ("wc_bench_combine.py",),
    "batch API": ("wc_bench_combine_batch_off.py",),
    "batch API, combined": ("wc_bench_combine_batch.py",),
    "tuple API, at least once": ("wc_bench_combine_off.py", *AT_LEAST_ONCE),
    "tuple API, at least once, combined": ("wc_bench_combine.py", *AT_LEAST_ONCE),
}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=6.0)
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()
    words: dict = {name: [] for name in RUNS}
    tuples: dict = {name: [] for name in RUNS}
    for r in range(args.rounds):
        for name, (file, *props) in RUNS.items():
            run = wordcount_e2e.run(args.seconds, 4.0, "squall.chaining=off", *props,
                                    topology=os.path.join(TOPOLOGIES, file))
            words[name].append(run["words_per_sec"])
            tuples[name].append(run["tuples_per_word"])
        print(f"round {r + 1}: " + ", ".join(f"{name} {v[-1] / 1e3:,.0f}k" for name, v in words.items()), flush=True)

    def ratio(a: str, b: str) -> str:
        rs = sorted(x / y for x, y in zip(words[a], words[b]))
        return f"{statistics.median(rs):.2f}x (rounds {rs[0]:.2f}x-{rs[-1]:.2f}x)"

    print(f"\n1/2/2, median of {args.rounds} rounds ({os.cpu_count()} cores): words/s, tuples into count "
          "a word")
    for name in RUNS:
        print(f"  {name:<36} {statistics.median(words[name]) / 1e3:>8,.0f}k  {statistics.median(tuples[name]):.3f}")
    print("ratios (each round against its own runs):")
    print(f"  tuple API combined / not combined: {ratio('tuple API, combined', 'tuple API')}")
    print(f"  batch API combined / not combined: {ratio('batch API, combined', 'batch API')}")
    print(f"  at least once, tuple API combined / not combined: "
          f"{ratio('tuple API, at least once, combined', 'tuple API, at least once')}")
    print(f"  at least once / at most once, not combined: {ratio('tuple API, at least once', 'tuple API')}")
    print(f"  at least once / at most once, combined: "
          f"{ratio('tuple API, at least once, combined', 'tuple API, combined')}")


if __name__ == "__main__":
    main()
