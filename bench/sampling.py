"""What tuple sampling costs a task's emits (docs/debugging.md, "Tuple sampling").

    .venv/bin/python bench/sampling.py [--frames 100] [--rounds 7]

A split task of examples/word_count.py (a bolt that emits one tuple per word) gets DATA frames of 1,000
sentences through ``on_frame``, as its process's loop hands them, with sampling off and at 1 %, 10 %
and 100 % of its emits (``runtime/instance/sampling.py``: the class's methods swapped, the sampled
emits written to an events log in a temporary folder at each frame, as the loop flushes). The settings
take turns, ``--rounds`` times, in this one process; prints the median words/s of each and its ratio to
sampling off (below 1 is slower). Prints figures, asserts nothing.
"""
from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

import msgpack

from squall.loader import load_topology_file
from squall.runtime.instance import make_instance
from squall.runtime.instance.sampling import EventsLog, Sampler
from squall.runtime.protocol import control_frame, data_frame

from instance_path import WORD_COUNT, physical_plan  # bench/ is this script's folder: first on sys.path

PERCENTS = (0.0, 1.0, 10.0, 100.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=100, help="frames of 1,000 sentences per measurement")
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    topology = load_topology_file(WORD_COUNT).plan
    import word_count  # loaded by load_topology_file

    split = make_instance(topology, "split", 4, 1, None)
    split.on_frame(control_frame(physical_plan=physical_plan()), 0.0)
    sentences = [[word_count.sentence(i)] for i in range(1000)]
    words = sum(len(s.split()) for (s,) in sentences)
    frame = data_frame(4, msgpack.packb([3, [["default", sentences]], 0]), len(sentences))
    folder = tempfile.mkdtemp(prefix="squall-bench-sampling-")
    events = EventsLog(os.path.join(folder, "events.log"))
    sampler = Sampler(split, events)

    def rate(percent: float) -> float:
        sampler.set_percent(percent)
        t0 = time.perf_counter()
        for _ in range(args.frames):
            split.on_frame(frame, 0.0)
            split.out.clear()
            events.flush()
        return args.frames * words / (time.perf_counter() - t0)

    rate(0.0)  # warm up
    figures: dict = {p: [] for p in PERCENTS}
    for _ in range(args.rounds):
        for percent in PERCENTS:
            figures[percent].append(rate(percent))
    sampler.set_percent(0.0)
    written = os.path.getsize(events.path)
    os.remove(events.path)
    os.rmdir(folder)
    off = statistics.median(figures[0.0])
    print(f"split task, {args.frames} frames of {words:,} words, {args.rounds} rounds (median):")
    for percent in PERCENTS:
        median = statistics.median(figures[percent])
        print(f"  sampling {'off' if percent == 0 else f'{percent:g}%':>5}: {median:,.0f} words/s out "
              f"({median / off:.3f}x of off)")
    print(f"  events written: {written / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
