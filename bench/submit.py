"""Seconds of `squall submit` and `squall kill` on the embedded local cluster, against another revision.

What every topology (and every test of one) pays to start: `squall submit` returns once the topology
is RUNNING and every instance process is through `initialize` (docs/runtime.md). The topology is
bench/topologies/wc_bench.py in 2 containers (`topology.workers=2`, 5 instances), nearly idle
(`bench.rate` 1 sentence/s). Each round submits and kills it once
with this tree's code and, with ``--against REF``, once with revision REF's code, alternately, each in
its own process (bench/revision.py); the figures are medians over the rounds.

    .venv/bin/python bench/submit.py [--rounds 5] [--against REF]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
TOPOLOGY = os.path.join(HERE, "topologies", "wc_bench.py")


def one_round() -> dict:
    """Submit and kill wc_bench once in a fresh ``SQUALL_HOME``: the seconds of each command."""
    home = tempfile.mkdtemp(prefix="squall-bench-submit-")
    os.environ["SQUALL_HOME"] = home
    from squall.cli import main

    try:
        t0 = time.monotonic()
        code = main(["submit", TOPOLOGY, "--config-property", f"bench.out.dir={home}",
                     "--config-property", "bench.rate=1", "--config-property", "topology.workers=2"])
        submit = time.monotonic() - t0
        if code:
            sys.exit(f"submit exited {code}")
        t0 = time.monotonic()
        main(["kill", "wc_bench"])
        return {"submit": submit, "kill": time.monotonic() - t0}
    finally:
        shutil.rmtree(home, ignore_errors=True)


def round_in(env: Optional[dict]) -> dict:
    """One round in its own process, whose ``squall`` is the code ``env`` puts first."""
    done = subprocess.run([sys.executable, os.path.abspath(__file__), "--json"], env=env, capture_output=True,
                          text=True, check=True)
    return json.loads(done.stdout.splitlines()[-1])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--against", metavar="REF", help="compare with git revision REF (e.g. 816a4b1)")
    p.add_argument("--json", action="store_true", help=argparse.SUPPRESS)  # one round, in its own process
    args = p.parse_args()
    if args.json:
        print(json.dumps(one_round()))
        return
    import revision

    trees = [("this tree", None)] + ([(args.against, revision.env_for(args.against))] if args.against else [])
    runs: Dict[str, List[dict]] = {name: [] for name, _ in trees}
    for r in range(args.rounds):
        for name, env in trees:
            runs[name].append(round_in(env))
        print(f"round {r + 1}: " + ", ".join(f"{name} submit {runs[name][-1]['submit']:.2f} s" for name, _ in trees),
              flush=True)
    print(f"\n{'':<12} {'submit s':>9} {'kill s':>7}   (medians of {args.rounds} rounds)")
    med = {name: {k: statistics.median(r[k] for r in runs[name]) for k in ("submit", "kill")} for name, _ in trees}
    for name, _ in trees:
        print(f"{name:<12} {med[name]['submit']:>9.2f} {med[name]['kill']:>7.2f}")
    if args.against:
        print(f"this tree / {args.against}: submit {med['this tree']['submit'] / med[args.against]['submit']:.2f}x, "
              f"kill {med['this tree']['kill'] / med[args.against]['kill']:.2f}x")


if __name__ == "__main__":
    main()
