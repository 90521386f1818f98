"""The instance's per-tuple path without sockets: where end-to-end time goes.

    .venv/bin/python bench/instance_path.py [--frames 200] [--profile]

Feeds DATA frames of 1,000 sentences to a split task and the resulting words
to a count task of examples/word_count.py through ``Instance.on_data`` (the
state machine each instance process runs), and prints sentences/s and
words/s beside a plain-Python baseline in the same run: the same split and
count as a loop over the unpacked batch. Then the same split and count as a
chain (``runtime/instance/chain.py``: count's tuples handed to it by call in
split's process), fed the same frames. ``--profile`` adds a cProfile listing
of the instance path.
"""
from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import time
from collections import Counter

import msgpack

from squall.idl import schema
from squall.loader import load_topology_file
from squall.runtime.instance import make_instance
from squall.runtime.protocol import DATA_HEADER_SIZE, control_frame, data_frame

HERE = os.path.dirname(os.path.abspath(__file__))
WORD_COUNT = os.path.join(HERE, "..", "examples", "word_count.py")


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=200)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()

    topology = load_topology_file(WORD_COUNT).plan
    import word_count  # loaded by load_topology_file

    split = make_instance(topology, "split", 4, 1, None)
    count = make_instance(topology, "count", 1, 1, None)
    for inst in (split, count):
        inst.on_plan(physical_plan())
    sentences = [[word_count.sentence(i)] for i in range(1000)]
    words = [[w] for (s,) in sentences for w in s.split()]
    sentence_frame = data_frame(4, msgpack.packb([3, [["default", sentences]], 0]))
    word_frame = data_frame(1, msgpack.packb([4, [["default", words]], 0]))

    def instances() -> tuple:
        t0 = time.perf_counter()
        for _ in range(args.frames):
            split.on_data(sentence_frame, 0.0)
            split.out.clear()
        t1 = time.perf_counter()
        for _ in range(args.frames):
            count.on_data(word_frame, 0.0)
            count.out.clear()
        t2 = time.perf_counter()
        return args.frames * len(sentences) / (t1 - t0), args.frames * len(words) / (t2 - t1)

    def baseline() -> float:
        counts: Counter = Counter()
        t0 = time.perf_counter()
        for _ in range(args.frames):
            _, runs = msgpack.unpackb(memoryview(sentence_frame)[DATA_HEADER_SIZE:])
            for (s,) in runs[0][1]:
                counts.update(s.split())
        return args.frames * len(words) / (time.perf_counter() - t0)

    from squall.runtime.instance.chain import Chain, link, refresh

    chained_split = make_instance(topology, "split", 4, 1, None, chained={"count": 1})
    chained_count = make_instance(topology, "count", 1, 1, None)
    link(chained_split, chained_count)
    chain = Chain([chained_split, chained_count])
    chain.on_frame(control_frame(physical_plan=physical_plan()), 0.0)
    refresh(chained_split)

    def chained() -> float:
        t0 = time.perf_counter()
        for _ in range(args.frames):
            chain.on_frame(sentence_frame, 0.0)
            chain.out.clear()
        return args.frames * len(words) / (time.perf_counter() - t0)

    base = baseline()
    split_rate, count_rate = instances()
    chain_rate = chained()
    print(f"baseline split+count loop: {base:,.0f} words/s")
    print(f"split task (Instance.on_data, emits words): {split_rate:,.0f} sentences/s = "
          f"{split_rate * len(words) / len(sentences):,.0f} words/s out ({split_rate * len(words) / len(sentences) / base:.2f}x)")
    print(f"count task (Instance.on_data, emits counts): {count_rate:,.0f} words/s ({count_rate / base:.2f}x)")
    print(f"split -> count chained (split's frames in, count by call): {chain_rate:,.0f} words/s "
          f"({chain_rate / base:.2f}x)")
    if args.profile:
        profile = cProfile.Profile()
        profile.runcall(chained)
        pstats.Stats(profile, stream=sys.stdout).sort_stats("tottime").print_stats(10)


if __name__ == "__main__":
    main()
