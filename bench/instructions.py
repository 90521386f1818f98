"""Instructions per word of each task of the end-to-end word count, under valgrind.

    .venv/bin/python bench/instructions.py [--frames 5 25]

Wall-clock figures on this machine drift by tens of percent from one second
to the next (other tenants); instruction counts do not. Each task of
bench/topologies/wc_bench.py (spout, split, count) runs its per-tuple path
through ``Instance`` (no sockets) under ``valgrind --tool=cachegrind``, once
with each of two frame counts; the difference divided by the words in
between is the task's instructions per word, start-up excluded. Needs
valgrind (Debian's ``valgrind`` package); prints figures, asserts nothing.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TASKS = {"sentence": 2, "split": 3, "count": 1}  # task ids in the plan below


def physical_plan() -> object:
    from squall.idl import schema

    locations = [schema.InstanceLocation(id=schema.InstanceId(c, t, 0), container=1, pid=t) for c, t in TASKS.items()]
    return schema.PhysicalPlan(
        topology_name="wc_bench", packing_plan_id="bench", status=schema.TopologyStatus.RUNNING,
        tmaster=schema.TMasterLocation("wc_bench", "localhost", 1, 1, "bench"),
        stmgrs=[schema.StMgrLocation(1, "localhost", 2, 1)], instances=locations,
    )


def run_task(component: str, frames: int) -> None:
    """The child: ``frames`` frames of 1,000 sentences (or their words) through one task."""
    import gc

    import msgpack

    from squall.loader import load_topology_file
    from squall.logical import with_overrides
    from squall.runtime.instance import make_instance
    from squall.runtime.protocol import data_frame

    topology = load_topology_file(os.path.join(HERE, "topologies", "wc_bench.py")).plan
    import wc_bench  # loaded by load_topology_file

    topology = with_overrides(topology, {"bench.out.dir": tempfile.mkdtemp()})
    inst = make_instance(topology, component, TASKS[component], 1, None)
    inst.on_plan(physical_plan())
    now = time.time()
    sentences = [[wc_bench.sentence(i), now] for i in range(1000)]
    words = [[w, now] for s, _ in sentences for w in s.split()]
    gc.set_threshold(50000, 10, 10)  # as instance processes run (squall.instance.gc.threshold)
    gc.freeze()
    if component == "sentence":
        for _ in range(frames * 10):  # next_tuple emits 100 sentences
            inst.component.next_tuple()
            inst.out.clear()
        return
    src, batch = (TASKS["sentence"], sentences) if component == "split" else (TASKS["split"], words)
    frame = data_frame(TASKS[component], msgpack.packb([src, [["default", batch]], 0]))
    for _ in range(frames):
        inst.on_data(frame, 0.0)
        inst.out.clear()


def instructions(component: str, frames: int) -> int:
    done = subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
                           sys.executable, os.path.abspath(__file__), "_task", component, str(frames)],
                          capture_output=True, text=True, check=True)
    return int(re.search(r"I\s+refs:\s+([\d,]+)", done.stderr).group(1).replace(",", ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, nargs=2, default=[5, 25], metavar=("FEW", "MANY"))
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        sys.exit("bench/instructions.py needs valgrind (apt-get install valgrind)")
    sys.path.insert(0, os.path.join(HERE, "topologies"))
    import wc_bench

    words = sum(len(wc_bench.sentence(i).split()) for i in range(1000))
    few, many = args.frames
    total = 0.0
    for component in TASKS:
        per_word = (instructions(component, many) - instructions(component, few)) / ((many - few) * words)
        total += per_word
        print(f"{component:>8}: {per_word:,.0f} instructions a word")
    print(f"   total: {total:,.0f} instructions a word (word count end to end, without the stream manager)")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "_task":
        sys.path.insert(0, HERE)
        run_task(sys.argv[2], int(sys.argv[3]))
    else:
        main()
