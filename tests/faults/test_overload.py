"""A 10x overload (a spout at 5,000 tuples/s, a bolt that waits 2 ms a tuple): memory stays flat and
nothing is dropped or duplicated.

The time a tuple waits between emit and process has a stated bound (docs/runtime.md, "Overload"):
``topology.max.spout.pending`` trees in flight at least once, ``squall.stmgr.max.queue.secs`` of the
bolt's measured rate at most once. bench/bounds.py measures those waits and the bolt's rate against
the bounds and an unloaded run; a test does not assert on time.
"""
import glob
import json
import os

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


def processed(out):
    return windows(out)[-1]["processed"] if windows(out) else 0


@pytest.mark.parametrize("mode", ["ATLEAST_ONCE", "ATMOST_ONCE"])
def test_overload_keeps_memory_flat_and_drops_nothing(cluster, tmp_path, mode):
    out = str(tmp_path / "out")
    os.mkdir(out)
    cluster.squall("submit", os.path.join(HERE, "topologies", "overload.py"), "--config-property",
                   f"overload.out.dir={out}", "--config-property", f"topology.reliability.mode={mode}",
                   "--config-property", "topology.max.spout.pending=100")
    # steady state: until the bolt's rate is measured its queue may hold a batch (1,000 tuples, ~2 s here)
    wait_until(lambda: processed(out) > 1500, timeout=30, what="the bolt to work")
    early = rss_mb(cluster)
    # the run under overload that is watched: 3,000 more tuples through the bolt (~7 s), the spout asking 10x
    wait_until(lambda: processed(out) > 4500, timeout=60, what="3,000 more tuples processed under overload")
    late = rss_mb(cluster)
    cluster.squall("deactivate", "overload")
    emitted = wait_until(lambda: [int(open(p).read()) for p in glob.glob(os.path.join(out, "emitted-*"))],
                         what="the spout's count")[0]
    wait_until(lambda: processed(out) >= emitted, timeout=60, what=f"the bolt to process all {emitted} emitted tuples")
    assert processed(out) == emitted, "tuples were dropped or duplicated"
    assert late - early < 10, f"memory grew from {early:.0f} to {late:.0f} MiB under overload"
    cluster.squall("kill", "overload")
