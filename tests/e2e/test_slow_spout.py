"""A spout whose next_tuple blocks still gets its tuples out on time and follows a new plan at once.

Heron's rule: a spout's burst ends on time as well as on size, so what it emitted leaves within the
flush interval, and it reads its stream manager (a new physical plan) before its next emit. Without
it, a spout sleeping 0.5 s a call held 64 calls' tuples (32 s), and a scale-down lost the tuples it
kept routing to retired tasks. The emit -> process latency itself is measured by bench/bounds.py.
"""
import glob
import json
import os
from collections import Counter

from e2e_harness import wait_until


def emitted(out):
    ids = Counter()
    for path in glob.glob(os.path.join(out, "emitted-*.log")):
        with open(path) as f:
            ids.update(int(line) for line in f if line.endswith("\n"))
    return ids


def seen(out):
    """id -> [latency, ...]"""
    found = {}
    for path in glob.glob(os.path.join(out, "seen-*.log")):
        with open(path) as f:
            for line in f:
                if line.endswith("\n"):
                    i, latency = line.split()
                    found.setdefault(int(i), []).append(float(latency))
    return found


def props(out, **config):
    return [f"e2e.out.dir={out}"] + [f"{k.replace('_', '.')}={v}" for k, v in config.items()]


def test_a_spout_sleeping_half_a_second_a_call_gets_its_tuples_out_before_its_burst_ends(cluster, tmp_path):
    """Ten ids, one per 0.5 s call: the first reaches its bolt while the spout is still emitting (a burst
    held for its size would keep every id until the 64th call)."""
    out = str(tmp_path / "out")
    os.mkdir(out)
    cluster.submit("slow_spout", *props(out, e2e_ids=10, e2e_sleep=0.5))
    wait_until(lambda: 0 in seen(out), timeout=30, what="the first id processed")
    assert len(emitted(out)) < 10, "the first id reached its bolt only once the spout had emitted every id"
    wait_until(lambda: len(seen(out)) == 10, timeout=30, what="ten ids processed")
    assert {i: len(v) for i, v in seen(out).items()} == {i: 1 for i in range(10)}
    cluster.squall("kill", "slow_spout")


def test_scaling_a_slow_spout_and_its_bolt_down_loses_no_tuple_at_most_once(cluster, tmp_path):
    out = str(tmp_path / "out")
    os.mkdir(out)
    cluster.submit("slow_spout", *props(out, e2e_ids=60, e2e_sleep=0.2))
    cluster.squall("update", "slow_spout", "--component-parallelism", "ids=2",
                   "--component-parallelism", "sink=3")
    wait_until(lambda: sum(emitted(out).values()) >= 20, timeout=30, what="ids emitted by both spouts")
    cluster.squall("update", "slow_spout", "--component-parallelism", "ids=1",
                   "--component-parallelism", "sink=1")
    wait_until(lambda: max(emitted(out)) >= 58, timeout=60, what="the remaining spout to emit its last ids")
    expected = emitted(out)
    wait_until(lambda: Counter({i: len(v) for i, v in seen(out).items()}) == expected, timeout=30,
               what=f"every emitted id processed once ({len(expected)} emitted, {len(seen(out))} seen)")
    data = json.loads(cluster.squall("show", "slow_spout", "--json")[0])
    assert data["status"] == "RUNNING"
    cluster.squall("kill", "slow_spout")
