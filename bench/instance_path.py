"""The instance's per-tuple path without sockets: where end-to-end time goes.

    .venv/bin/python bench/instance_path.py [--frames 200] [--reliable] [--profile] [--against REF [--rounds 5]]

Feeds DATA frames of 1,000 sentences to a split task and the resulting words
to a count task of examples/word_count.py through ``on_frame`` (the events
each instance process handles), and prints sentences/s and words/s beside a
plain-Python baseline in the same run: the same split and count as a loop
over the unpacked batch. Then the same split and count as a chain
(``runtime/instance/chain.py``: count's tuples handed to it by call in
split's process), fed the same frames. ``--reliable``: at least once, each
sentence in a tree of its own (its words in the span of their sentence).
``--profile`` adds a cProfile listing of the chained path.

``--against REF`` runs the same measurements on git revision REF's code
(``bench/revision.py``) and on this tree, alternately, ``--rounds`` times each,
each run in its own process, and prints the median of each figure for both
and their ratio (this tree / REF; above 1 is faster).
"""
from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import statistics
import subprocess
import sys
import time
from collections import Counter

import msgpack

from squall.idl import schema
from squall.loader import load_topology_file
from squall.logical import with_overrides
from squall.runtime.instance import make_instance
from squall.runtime.protocol import DATA_HEADER_SIZE, control_frame, data_frame

HERE = os.path.dirname(os.path.abspath(__file__))
WORD_COUNT = os.path.join(HERE, "..", "examples", "word_count.py")
FIGURES = ("baseline", "split", "count", "chained")  # words/s (split: words/s out)


def physical_plan() -> object:
    locations = []
    for component, tasks in (("count", [1, 2]), ("sentence", [3]), ("split", [4, 5])):
        for index, task in enumerate(tasks):
            locations.append(schema.InstanceLocation(id=schema.InstanceId(component, task, index), container=1, pid=task))
    return schema.PhysicalPlan(
        topology_name="word_count", packing_plan_id="bench", status=schema.TopologyStatus.RUNNING,
        tmaster=schema.TMasterLocation("word_count", "localhost", 1, 1, "bench"),
        stmgrs=[schema.StMgrLocation(1, "localhost", 2, 1)], instances=locations,
    )


def measure(frames: int, reliable: bool, profile: bool = False) -> dict:
    """The figures of one run (words/s), with this process's ``squall``."""
    topology = load_topology_file(WORD_COUNT).plan
    import word_count  # loaded by load_topology_file

    if reliable:
        topology = with_overrides(topology, {"topology.reliability.mode": "ATLEAST_ONCE"})
    plan = control_frame(physical_plan=physical_plan())
    split = make_instance(topology, "split", 4, 1, None)
    count = make_instance(topology, "count", 1, 1, None)
    for inst in (split, count):
        inst.on_frame(plan, 0.0)
    sentences = [[word_count.sentence(i)] for i in range(1000)]
    words = [[w] for (s,) in sentences for w in s.split()]
    sentence_run: list = ["default", sentences]
    word_run: list = ["default", words]
    if reliable:  # a tree per sentence (spout task 3); a sentence's words in one span of its tree
        roots = [(3 << 48) | (i + 1) for i in range(len(sentences))]
        sentence_run.append([x for i, root in enumerate(roots) for x in (i, root, 0x5A5A + i)])
        starts, at = [], 0
        for (s,) in sentences:
            starts.append(at)
            at += len(s.split())
        word_run.append([x for i, root in enumerate(roots) for x in (starts[i], root, 0xA5A5 + i)])
    sentence_frame = data_frame(4, msgpack.packb([3, [sentence_run], 0]), len(sentences))
    word_frame = data_frame(1, msgpack.packb([4, [word_run], 0]), len(words))

    def instances() -> tuple:
        t0 = time.perf_counter()
        for _ in range(frames):
            split.on_frame(sentence_frame, 0.0)
            split.out.clear()
        t1 = time.perf_counter()
        for _ in range(frames):
            count.on_frame(word_frame, 0.0)
            count.flush_all()
            count.out.clear()
        t2 = time.perf_counter()
        return frames * len(words) / (t1 - t0), frames * len(words) / (t2 - t1)

    def baseline() -> float:
        counts: Counter = Counter()
        t0 = time.perf_counter()
        for _ in range(frames):
            _, runs, _epoch = msgpack.unpackb(memoryview(sentence_frame)[DATA_HEADER_SIZE:])
            for (s,) in runs[0][1]:
                counts.update(s.split())
        return frames * len(words) / (time.perf_counter() - t0)

    from squall.runtime.instance import chain as chain_module

    chained_split = make_instance(topology, "split", 4, 1, None, chained={"count": 1})
    chained_count = make_instance(topology, "count", 1, 1, None)
    if hasattr(chain_module, "link"):  # revisions before the chain linked its members itself
        chain_module.link(chained_split, chained_count)
    chain = chain_module.Chain([chained_split, chained_count])
    chain.on_frame(plan, 0.0)

    def chained() -> float:
        t0 = time.perf_counter()
        for _ in range(frames):
            chain.on_frame(sentence_frame, 0.0)
            chain.flush_all()
            chain.out.clear()
        return frames * len(words) / (time.perf_counter() - t0)

    base = baseline()
    split_rate, count_rate = instances()
    figures = {"baseline": base, "split": split_rate, "count": count_rate, "chained": chained()}
    if profile:
        stats = cProfile.Profile()
        stats.runcall(chained)
        pstats.Stats(stats, stream=sys.stdout).sort_stats("tottime").print_stats(10)
    return figures


def show(figures: dict) -> None:
    base = figures["baseline"]
    print(f"baseline split+count loop: {base:,.0f} words/s")
    print(f"split task (emits words): {figures['split']:,.0f} words/s out ({figures['split'] / base:.2f}x)")
    print(f"count task (emits counts): {figures['count']:,.0f} words/s ({figures['count'] / base:.2f}x)")
    print(f"split -> count chained (split's frames in, count by call): {figures['chained']:,.0f} words/s "
          f"({figures['chained'] / base:.2f}x)")


def against(ref: str, rounds: int, frames: int, reliable: bool) -> None:
    """Alternate runs of REF's code and this tree's, each in its own process; medians and ratios."""
    import revision

    runs: dict = {"ref": [], "this": []}
    command = [sys.executable, os.path.abspath(__file__), "--frames", str(frames), "--json"]
    if reliable:
        command.append("--reliable")
    ref_env = revision.env_for(ref)
    for r in range(rounds):
        for which, env in (("ref", ref_env), ("this", None)):
            done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
            runs[which].append(json.loads(done.stdout.splitlines()[-1]))
        print(f"round {r + 1}: " + "; ".join(f"{which} " + ", ".join(f"{k} {v[-1][k] / 1e3:,.0f}k" for k in FIGURES)
                                             for which, v in runs.items()), flush=True)
    print(f"\nmedian of {rounds} rounds, words/s ({'at least once' if reliable else 'at most once'}; "
          f"this tree / {ref} = ratio of medians; the ratio to each run's own baseline in brackets):")
    for k in FIGURES:
        old = statistics.median(run[k] for run in runs["ref"])
        new = statistics.median(run[k] for run in runs["this"])
        rel_old = statistics.median(run[k] / run["baseline"] for run in runs["ref"])
        rel_new = statistics.median(run[k] / run["baseline"] for run in runs["this"])
        print(f"  {k:<9} {ref}: {old / 1e3:>8,.0f}k ({rel_old:.3f}x)   this tree: {new / 1e3:>8,.0f}k "
              f"({rel_new:.3f}x)   ratio {new / old:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=200)
    parser.add_argument("--reliable", action="store_true", help="at least once")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--against", metavar="REF", help="compare with git revision REF (e.g. faad9f0)")
    parser.add_argument("--rounds", type=int, default=5, help="with --against: runs of each")
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)  # one run's figures (--against)
    args = parser.parse_args()
    if args.against:
        against(args.against, args.rounds, args.frames, args.reliable)
        return
    figures = measure(args.frames, args.reliable, args.profile)
    if args.json:
        print(json.dumps(figures))
    else:
        show(figures)


if __name__ == "__main__":
    main()
