"""A stream manager that dies takes none of its container's instances with it.

They keep running with their user objects (a spout's position in memory), rejoin the restarted
stream manager, and at least once only what was in flight is replayed: at most
``topology.max.spout.pending`` ids per spout task are processed twice.
"""
import glob
import json
import os
import signal
from collections import Counter

from e2e_harness import wait_until

HERE = os.path.dirname(os.path.abspath(__file__))
IDS, PENDING, SPOUT_TASKS = 6000, 200, 2


def acked(out):
    ids = set()
    for path in glob.glob(os.path.join(out, "acked-*.log")):
        with open(path) as f:
            ids.update(int(line) for line in f if line.endswith("\n"))
    return ids


def seen(out):
    counts = Counter()
    for path in glob.glob(os.path.join(out, "seen-*.log")):
        with open(path) as f:
            counts.update(int(line) for line in f if line.endswith("\n"))
    return counts


def show(cluster, name):
    return json.loads(cluster.squall("show", name, "--json")[0])


def instance_pids(data):
    return {p["process"]: p["pid"] for p in data["processes"] if p["process"].startswith("instance ")}


def test_a_killed_stream_manager_restarts_no_instance_and_replays_only_what_was_in_flight(cluster, tmp_path):
    out = str(tmp_path / "out")
    os.mkdir(out)
    cluster.squall("submit", os.path.join(HERE, "topologies", "in_memory.py"),
                   "--config-property", f"faults.out.dir={out}")
    before = show(cluster, "in_memory")
    pids = instance_pids(before)
    spout_container = next(p["container"] for p in before["processes"] if p["process"].startswith("instance ids"))
    stmgr = next(p["pid"] for p in before["processes"]
                 if p["container"] == spout_container and p["process"] == "stmgr")
    wait_until(lambda: len(acked(out)) > 1000, timeout=60, what="ids to be acked")

    os.kill(stmgr, signal.SIGKILL)
    wait_until(lambda: next(p["pid"] for p in show(cluster, "in_memory")["processes"]
                            if p["container"] == spout_container and p["process"] == "stmgr") not in (None, stmgr),
               timeout=30, what="the stream manager to be restarted")
    wait_until(lambda: len(acked(out)) == IDS, timeout=120, interval=0.5,
               what=f"every one of {IDS} ids to be acked (so far {len(acked(out))})")

    counts = seen(out)
    assert set(counts) == set(range(IDS)), f"{IDS - len(counts)} ids were never processed"
    duplicates = sum(n - 1 for n in counts.values())
    assert duplicates <= PENDING * SPOUT_TASKS, (
        f"{duplicates} ids processed twice: more than what was in flight "
        f"({PENDING} pending per spout task x {SPOUT_TASKS})")
    after = show(cluster, "in_memory")
    assert instance_pids(after) == pids, "an instance was restarted with its stream manager"
    wait_until(lambda: show(cluster, "in_memory")["status"] == "RUNNING", timeout=30,
               what="the topology to be RUNNING again")
    cluster.squall("kill", "in_memory")
