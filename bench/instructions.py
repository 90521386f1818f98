"""Instructions per word of each task of the end-to-end word count, under valgrind.

    .venv/bin/python bench/instructions.py [--frames 5 25] [--reliable] [--api tuple|batch] [--against REF]

Wall-clock figures on this machine drift by tens of percent from one second
to the next (other tenants); instruction counts do not. Each task of
bench/topologies/wc_bench.py (spout, split, count; ``--api batch``: the
same word count in the batch API, wc_bench_batch.py) runs its per-tuple path
through its instance (no sockets) under ``valgrind --tool=cachegrind``, once
with each of two frame counts; the difference divided by the words in
between is the task's instructions per word, start-up excluded. Then the
three as one chain (sentence -> split -> count in one process, tuples handed
on by call: ``runtime/instance/chain.py``). ``--reliable``: at least once
(the spout emits with ids and takes their acks, two ACK frames a burst as the
two count tasks send them; the frames carry spans). Needs valgrind (Debian's
``valgrind`` package); prints figures, asserts nothing.

``--against REF`` counts the same with git revision REF's code too
(``bench/revision.py``) and prints both and their ratio (this tree / REF;
below 1 is fewer instructions).
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
from typing import Optional

HERE = os.path.dirname(os.path.abspath(__file__))
TASKS = {"sentence": 2, "split": 3, "count": 1}  # task ids in the plan below
TOPOLOGIES = {"tuple": "wc_bench.py", "batch": "wc_bench_batch.py"}  # the word count in each API, one task each
CHAIN = "chain"  # sentence -> split -> count in one process
ROOT_SHIFT = 48  # a root's spout task above these bits (runtime/acking.py)


def physical_plan() -> object:
    from squall.idl import schema

    locations = [schema.InstanceLocation(id=schema.InstanceId(c, t, 0), container=1, pid=t) for c, t in TASKS.items()]
    return schema.PhysicalPlan(
        topology_name="wc_bench", packing_plan_id="bench", status=schema.TopologyStatus.RUNNING,
        tmaster=schema.TMasterLocation("wc_bench", "localhost", 1, 1, "bench"),
        stmgrs=[schema.StMgrLocation(1, "localhost", 2, 1)], instances=locations,
    )


def run_task(component: str, frames: int, reliable: bool, api: str = "tuple") -> None:
    """The child: ``frames`` frames of 1,000 sentences (or their words) through one task, or the chain."""
    import gc
    from itertools import chain, repeat
    from operator import itemgetter

    import msgpack

    from squall.loader import load_topology_file
    from squall.logical import with_overrides
    from squall.runtime.instance import make_instance
    from squall.runtime.protocol import ACK, control_frame, data_frame

    topology = load_topology_file(os.path.join(HERE, "topologies", TOPOLOGIES[api])).plan
    import wc_bench  # loaded by load_topology_file

    overrides: dict = {"bench.out.dir": tempfile.mkdtemp()}
    if reliable:
        overrides.update({"topology.reliability.mode": "ATLEAST_ONCE", "topology.max.spout.pending": None})
    topology = with_overrides(topology, overrides)
    plan = control_frame(physical_plan=physical_plan())
    if component == CHAIN:
        from squall.runtime.instance import chain as chain_module

        members = [make_instance(topology, "sentence", TASKS["sentence"], 1, None, chained={"split": TASKS["split"]}),
                   make_instance(topology, "split", TASKS["split"], 1, None, chained={"count": TASKS["count"]}),
                   make_instance(topology, "count", TASKS["count"], 1, None)]
        if hasattr(chain_module, "link"):  # revisions before the chain linked its members itself
            for up, down in zip(members, members[1:]):
                chain_module.link(up, down)
        inst = chain_module.Chain(members)
        component_obj = members[0].component
    else:
        inst = make_instance(topology, component, TASKS[component], 1, None)
        component_obj = inst.component
    inst.on_frame(plan, 0.0)
    now = time.time()
    sentences = [[wc_bench.sentence(i), now] for i in range(1000)]
    words = [[w, now] for s, _ in sentences for w in s.split()]
    gc.set_threshold(50000, 10, 10)  # as instance processes run (squall.instance.gc.threshold)
    gc.freeze()
    if component in ("sentence", CHAIN):
        acking = reliable and component == "sentence"
        for _ in range(frames * 10):  # next_tuple emits 100 sentences
            component_obj.next_tuple()
            inst.flush_all()
            inst.out.clear()
            if acking:  # each tree acked as the two count tasks ack a sentence: an ACK frame each (built at C speed)
                trees = inst.tracker.trees
                for values in (repeat(0x5A5A), map(itemgetter(1), trees.values())):  # the second closes each tree
                    acks = list(chain.from_iterable(zip(list(trees), values)))
                    inst.on_frame(data_frame(TASKS["sentence"], msgpack.packb([TASKS["count"], acks, []]), 0, ACK),
                                  0.0)
                if trees:
                    sys.exit(f"{len(trees)} trees left open: the acks did not close them")
        return
    src, batch = (TASKS["sentence"], sentences) if component == "split" else (TASKS["split"], words)
    run: list = ["default", batch]
    if reliable:  # one tree per sentence; a sentence's words in one span of its tree
        starts, at = [], 0
        for s, _ in sentences:
            starts.append(at)
            at += len(s.split())
        firsts = range(len(sentences)) if component == "split" else starts
        run.append([x for i, start in enumerate(firsts) for x in (start, (TASKS["sentence"] << ROOT_SHIFT) | (i + 1),
                                                                  0x5A5A + i)])
    frame = data_frame(TASKS[component], msgpack.packb([src, [run], 0]), len(batch))
    for _ in range(frames):
        inst.on_frame(frame, 0.0)
        inst.flush_all()
        inst.out.clear()


def instructions(component: str, frames: int, reliable: bool, api: str, env: Optional[dict] = None) -> int:
    command = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
               sys.executable, os.path.abspath(__file__), "_task", component, str(frames), api]
    done = subprocess.run(command + (["reliable"] if reliable else []), capture_output=True, text=True, check=True,
                          env=env)
    return int(re.search(r"I\s+refs:\s+([\d,]+)", done.stderr).group(1).replace(",", ""))


def per_word(few: int, many: int, reliable: bool, api: str, env: Optional[dict]) -> dict:
    """Instructions a word of each task and of the chain, with the ``squall`` of ``env``."""
    import wc_bench

    words = sum(len(wc_bench.sentence(i).split()) for i in range(1000))
    return {task: (instructions(task, many, reliable, api, env) - instructions(task, few, reliable, api, env))
            / ((many - few) * words) for task in (*TASKS, CHAIN)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, nargs=2, default=[5, 25], metavar=("FEW", "MANY"))
    parser.add_argument("--reliable", action="store_true", help="at least once")
    parser.add_argument("--api", choices=TOPOLOGIES, default="tuple", help="the word count's API (default tuple)")
    parser.add_argument("--against", metavar="REF", help="compare with git revision REF (e.g. faad9f0)")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        sys.exit("bench/instructions.py needs valgrind (apt-get install valgrind)")
    sys.path.insert(0, os.path.join(HERE, "topologies"))
    few, many = args.frames
    mode = f"{args.api} API, " + ("at least once" if args.reliable else "at most once")
    this = per_word(few, many, args.reliable, args.api, None)
    if not args.against:
        for task, figure in this.items():
            print(f"{task:>8}: {figure:,.0f} instructions a word ({mode})")
        print(f"   total: {sum(this[t] for t in TASKS):,.0f} instructions a word (word count end to end unchained, "
              f"without the stream manager); chained: {this[CHAIN]:,.0f}")
        return
    import revision

    ref = per_word(few, many, args.reliable, args.api, revision.env_for(args.against))
    print(f"instructions a word ({mode}): {args.against} | this tree | ratio")
    for task in this:
        print(f"{task:>8}: {ref[task]:>8,.0f} | {this[task]:>8,.0f} | {this[task] / ref[task]:.3f}")
    old, new = sum(ref[t] for t in TASKS), sum(this[t] for t in TASKS)
    print(f"   total: {old:>8,.0f} | {new:>8,.0f} | {new / old:.3f}  (unchained, without the stream manager)")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "_task":
        sys.path.insert(0, HERE)
        sys.path.insert(0, os.path.join(HERE, "topologies"))
        run_task(sys.argv[2], int(sys.argv[3]), sys.argv[5:] == ["reliable"], sys.argv[4])
    else:
        main()
