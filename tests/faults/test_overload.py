"""A 10x overload (a spout at 5,000 tuples/s, a bolt that waits 2 ms a tuple): memory stays flat,
nothing is dropped, and the time a tuple waits between emit and process stays under a stated bound.

The bounds stated (docs/runtime.md, "Overload"):
- at least once: ``topology.max.spout.pending`` trees in flight, so a tuple waits at most about
  pending / the bolt's rate (100 / ~450 per s = 0.22 s here); asserted under 1 s;
- at most once: each hop's queue is held under ``squall.stmgr.max.queue.secs`` (1 s) of the
  bolt's measured rate, and spouts are told to stop, so a tuple waits about that long; asserted
  under 3 s. Before either bound existed a tuple waited ~50 s here.
"""
import glob
import json
import os
import time

import psutil
import pytest

from e2e_harness import wait_until

HERE = os.path.dirname(os.path.abspath(__file__))


def windows(out):
    rows = []
    for path in glob.glob(os.path.join(out, "waits-*.jsonl")):
        with open(path) as f:
            rows += [json.loads(line) for line in f if line.endswith("\n")]
    return sorted(rows, key=lambda r: r["at"])


def rss_mb(cluster):
    processes = json.loads(cluster.squall("show", "overload", "--json")[0])["processes"]
    return sum(psutil.Process(p["pid"]).memory_info().rss for p in processes
               if p["process"] in ("stmgr",) or p["process"].startswith("instance")) / 2**20


@pytest.mark.parametrize("mode,bound", [("ATLEAST_ONCE", 1.0), ("ATMOST_ONCE", 3.0)])
def test_overload_keeps_memory_flat_and_waits_bounded(cluster, tmp_path, mode, bound, capsys):
    out = str(tmp_path / "out")
    os.mkdir(out)
    cluster.squall("submit", os.path.join(HERE, "topologies", "overload.py"), "--config-property",
                   f"overload.out.dir={out}", "--config-property", f"topology.reliability.mode={mode}",
                   "--config-property", "topology.max.spout.pending=100")
    # steady state: until the bolt's rate is measured its queue may hold a batch (1,000 tuples, ~2 s here)
    wait_until(lambda: windows(out) and windows(out)[-1]["processed"] > 1500, timeout=30, what="the bolt to work")
    early = rss_mb(cluster)
    started = time.time()
    time.sleep(8)  # the run under overload that is measured
    late = rss_mb(cluster)
    cluster.squall("deactivate", "overload")
    emitted = wait_until(lambda: [int(open(p).read()) for p in glob.glob(os.path.join(out, "emitted-*"))],
                         what="the spout's count")[0]
    wait_until(lambda: windows(out)[-1]["processed"] >= emitted, timeout=60,
               what=f"the bolt to process all {emitted} emitted tuples")
    measured = [w for w in windows(out) if w["at"] > started]
    longest = max(w["longest"] for w in measured)
    rate = (measured[-1]["processed"] - measured[0]["processed"]) / (measured[-1]["at"] - measured[0]["at"])
    with capsys.disabled():
        print(f"\n[{mode}] longest wait {longest:.2f}s (bound {bound}s), bolt {rate:.0f} tuples/s, "
              f"spout asked 5000/s, rss {early:.0f} -> {late:.0f} MiB")
    assert rate < 1000, "the bolt was not overloaded"
    assert longest < bound, f"a tuple waited {longest:.2f}s between emit and process"
    assert windows(out)[-1]["processed"] == emitted, "tuples were dropped or duplicated"
    assert late - early < 10, f"memory grew from {early:.0f} to {late:.0f} MiB under overload"
    cluster.squall("kill", "overload")
