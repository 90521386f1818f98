"""At least once under faults: SIGKILL each kind of process mid-run; every id is processed and acked.

Duplicates (ids processed more than once: replays of trees that touched a
dead process) are counted and reported, never hidden.
"""
import glob
import json
import os
import signal
from collections import Counter

import pytest

from e2e_harness import wait_until

from squall.testing.words import RATE_FILE_KEY, set_rate

HERE = os.path.dirname(os.path.abspath(__file__))
IDS = 1500


def acked(out):
    path = os.path.join(out, "acked.log")
    if not os.path.exists(path):
        return set()
    with open(path) as f:
        return {int(line) for line in f if line.endswith("\n")}


def seen(out):
    counts = Counter()
    for path in glob.glob(os.path.join(out, "seen-*.log")):
        with open(path) as f:
            counts.update(int(line) for line in f if line.endswith("\n"))
    return counts


def rate_file(out):
    return os.path.join(out, "rate")


def submit(cluster, out, *props, file="reliable.py"):
    args = ["submit", os.path.join(HERE, "topologies", file), "--config-property", f"faults.out.dir={out}",
            "--config-property", f"{RATE_FILE_KEY}={rate_file(out)}"]
    for p in props:
        args += ["--config-property", p]
    cluster.squall(*args)


def victim_pid(cluster, kind):
    processes = json.loads(cluster.squall("show", "reliable", "--json")[0])["processes"]
    spout = next(p for p in processes if p["process"].startswith(("instance ids", "chain ids")))
    if kind in ("spout", "chain"):
        return spout["pid"]
    if kind == "bolt":
        return next(p["pid"] for p in processes if p["process"].startswith("instance relay"))
    if kind == "tmaster":
        return next(p["pid"] for p in processes if p["process"].startswith("tmaster"))
    # the stream / metrics manager of the spout's container: its loss reaches everything
    return next(p["pid"] for p in processes if p["container"] == spout["container"] and p["process"] == kind)


def finish(cluster, out, report):
    wait_until(lambda: len(acked(out)) == IDS, timeout=120, interval=0.5,
               what=f"every one of {IDS} ids to be acked (acked so far: {len(acked(out))})")
    counts = seen(out)
    missing = set(range(IDS)) - set(counts)
    duplicates = sum(n - 1 for n in counts.values())
    report(f"{duplicates} duplicates ({sum(1 for n in counts.values() if n > 1)} ids processed more than once)")
    assert not missing, f"{len(missing)} acked ids were never processed: {sorted(missing)[:10]}"
    assert set(counts) == set(range(IDS))
    cluster.squall("kill", "reliable")
    return duplicates


@pytest.mark.parametrize("kind", ["bolt", "spout", "stmgr", "metricsmgr", "tmaster"])
def test_sigkill_loses_no_id(cluster, tmp_path, kind, record_property, capsys):
    out = str(tmp_path / "out")
    os.mkdir(out)
    submit(cluster, out)
    wait_until(lambda: len(acked(out)) > 200, timeout=60, what="ids to be acked")
    os.kill(victim_pid(cluster, kind), signal.SIGKILL)
    set_rate(rate_file(out), float("inf"))  # the rest of the ids through the recovery, unpaced
    duplicates = finish(cluster, out, lambda text: record_property("duplicates", text))
    with capsys.disabled():
        print(f"\n[{kind} killed] {duplicates} duplicates of {IDS} ids")


@pytest.mark.parametrize("kind", ["chain", "stmgr"])
def test_sigkill_of_a_chain_or_its_stream_manager_loses_no_id(cluster, tmp_path, kind, capsys):
    """ids and relay run chained (one process each pair): its SIGKILL restarts both, the replay is
    the spout's; its stream manager's SIGKILL restarts neither."""
    out = str(tmp_path / "out")
    os.mkdir(out)
    submit(cluster, out, file="reliable_chain.py")
    shown = json.loads(cluster.squall("show", "reliable", "--json")[0])
    assert shown["chains"] == [["ids", "relay"]]
    wait_until(lambda: len(acked(out)) > 200, timeout=60, what="ids to be acked")
    os.kill(victim_pid(cluster, kind), signal.SIGKILL)
    set_rate(rate_file(out), float("inf"))  # the rest of the ids through the recovery, unpaced
    duplicates = finish(cluster, out, lambda text: None)
    with capsys.disabled():
        print(f"\n[{kind} killed, chained] {duplicates} duplicates of {IDS} ids")


# each way of failing and each topology once (fail() unchained, a raise in a chain): the four pairs took 35 s
@pytest.mark.parametrize("how, file", [("fail", "reliable.py"), ("raise", "reliable_chain.py")])
def test_failed_and_raising_tuples_are_replayed_until_done(cluster, tmp_path, how, file):
    out = str(tmp_path / "out")
    os.mkdir(out)
    submit(cluster, out, "faults.fail.every=7", f"faults.fail.how={how}", file=file)
    duplicates = finish(cluster, out, lambda text: None)
    assert duplicates == 0, "a tuple failed before it was processed is replayed, not duplicated"
