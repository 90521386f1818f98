"""The chaos run (issue 29): random SIGKILLs of every role, the local supervisor included, while an
effectively-once word count runs with its state in ZooKeeper; the final counts must be exact.

A real ZooKeeper server (squall.state.zkserver) holds the state; ``LocalCluster`` runs
squall.testing.words.counting_topology (a stateful spout, a split, a two-phase counting sink). Once counting
has started, the script SIGKILLs ``--kills`` processes, one at a time at random moments (a random
pause after the topology has recovered from the previous kill), drawn from every role: executor,
stmgr, instance, tmaster, metricsmgr and the supervisor, each at least once. It prints the words
expected and counted (and where they differ), the kills per role and the recovery time per role:
seconds from the SIGKILL until the topology is RUNNING again (for the supervisor: until a new one
has recorded itself). It exits 1 if the counts are not exact.

    .venv/bin/python bench/chaos.py --sentences 60000 --kills 15
"""
from __future__ import annotations

import argparse
import collections
import os
import random
import signal
import statistics
import sys
import tempfile
import time
import uuid

import psutil

from squall.processargs import DaemonArgs, ProcessArgs
from squall.state import Kind
from squall.state.zkserver import ZooKeeperServer
from squall.testing import LocalCluster, wait_until
from squall.testing.sinks import committed_counts
from squall.testing.words import counting_topology, expected

ROLES = ("executor", "stmgr", "instance", "tmaster", "metricsmgr", "supervisor")
SUPERVISOR = "squall.scheduler.supervisor"


def processes(name: str, role: str) -> list[int]:
    """Live pids of ``role`` in topology ``name``."""
    found = []
    for p in psutil.process_iter(["cmdline", "status"]):
        if p.info["status"] == psutil.STATUS_ZOMBIE:
            continue
        cmdline = p.info["cmdline"] or []
        args = ProcessArgs.from_cmdline(cmdline)
        if args is not None and args.topology == name and args.role == role:
            found.append(p.pid)
        elif role == "supervisor":
            daemon = DaemonArgs.from_cmdline(cmdline)
            if daemon is not None and daemon.topology == name and daemon.module == SUPERVISOR:
                found.append(p.pid)
    return found


def running(cluster: LocalCluster, name: str) -> bool:
    try:
        return cluster.show(name)["status"] == "RUNNING"
    except Exception:  # the state or the topology master is briefly unreachable mid-recovery
        return False


def supervisor_back(cluster: LocalCluster, name: str, killed: int) -> bool:
    location = cluster.state.get(Kind.SCHEDULER, name)
    return location is not None and location.supervisor_pid not in (None, killed) \
        and location.supervisor_pid in processes(name, "supervisor")


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sentences", type=int, default=60000, help="sentences the spouts emit (3 words each on average)")
    p.add_argument("--rate", type=float, default=300.0, help="sentences per second per spout task")
    p.add_argument("--kills", type=int, default=15)
    p.add_argument("--pause", type=float, nargs=2, default=(1.0, 5.0), metavar=("MIN", "MAX"),
                   help="random pause between a recovery and the next kill, seconds")
    p.add_argument("--seed", type=int, default=None)
    a = p.parse_args(argv)
    seed = a.seed if a.seed is not None else random.randrange(1 << 30)
    rng = random.Random(seed)
    roles = list(ROLES) + [rng.choice(ROLES) for _ in range(max(0, a.kills - len(ROLES)))]
    rng.shuffle(roles)
    want = expected(a.sentences)
    total = sum(want.values())
    print(f"chaos: {a.sentences} sentences, {total} words, {len(roles)} kills, seed {seed}")

    work = tempfile.mkdtemp(prefix="squall-chaos-")
    out = os.path.join(work, "out")
    os.mkdir(out)
    zk = ZooKeeperServer()
    zk.start()
    config = os.path.join(work, "cluster.yaml")
    with open(config, "w") as f:
        f.write(f"squall.state.manager: zookeeper\nsquall.state.zookeeper.connect: '{zk.hosts}'\n"
                f"squall.state.root: '/chaos-{uuid.uuid4().hex[:8]}'\n"
                f"squall.state.zookeeper.auth: 'squall:{uuid.uuid4().hex}'\n")
    kills: collections.Counter = collections.Counter()
    recovery: dict[str, list[float]] = collections.defaultdict(list)
    try:
        with LocalCluster(home=os.path.join(work, "home"), config_path=config) as cluster:
            started = time.monotonic()
            name = cluster.submit(counting_topology(
                "chaos_count", a.sentences, a.rate, out=out,
                config={"topology.state.checkpoint.interval.secs": 1.0, "squall.restart.max": 100}))
            wait_until(lambda: committed_counts(out)[1], timeout=120, what="the first committed counts")
            for role in roles:
                time.sleep(rng.uniform(*a.pause))  # a random moment: the chaos, not a test's event
                victims = processes(name, role)
                if not victims:
                    print(f"  no {role} to kill")
                    continue
                victim = rng.choice(victims)
                os.kill(victim, signal.SIGKILL)
                killed_at = time.monotonic()
                kills[role] += 1
                done = sum(committed_counts(out)[1].values())
                if role == "supervisor":
                    wait_until(lambda: supervisor_back(cluster, name, victim), timeout=120,
                               what="a new supervisor", interval=0.2)
                else:
                    wait_until(lambda: not running(cluster, name) or victim not in processes(name, role),
                               timeout=30, what=f"the {role}'s death to be seen", interval=0.2)
                wait_until(lambda: running(cluster, name), timeout=180, what=f"RUNNING again after a {role} kill",
                           interval=0.2)
                recovery[role].append(time.monotonic() - killed_at)
                print(f"  {time.monotonic() - started:6.1f}s killed {role} (pid {victim}) at {done} words; "
                      f"RUNNING again after {recovery[role][-1]:.1f}s")
            wait_until(lambda: sum(committed_counts(out)[1].values()) >= total, timeout=600, interval=0.5,
                       what=f"all {total} words committed")
            # two checkpoints more: a count past the total (a duplicate) would show by then
            last = committed_counts(out)[0]
            wait_until(lambda: committed_counts(out)[0] >= last + 2, timeout=60, what="two more checkpoints")
            checkpoint, counts = committed_counts(out)
            elapsed = time.monotonic() - started
            cluster.kill(name)
    finally:
        zk.close()
    counted = sum(counts.values())
    wrong = {w: counts[w] - want[w] for w in set(counts) | set(want) if counts[w] != want[w]}
    print(f"\nwords expected {total}, counted {counted} (checkpoint {checkpoint}); "
          f"{'exact' if not wrong else f'{len(wrong)} words differ, e.g. {dict(list(wrong.items())[:5])}'}")
    print(f"run {elapsed:.0f}s, {sum(kills.values())} kills")
    print(f"{'role':12} {'kills':>5} {'recovery mean s':>16} {'max s':>7}")
    for role in ROLES:
        times = recovery.get(role, [])
        print(f"{role:12} {kills[role]:5d} {statistics.mean(times) if times else 0:16.1f} "
              f"{max(times) if times else 0:7.1f}")
    return 0 if not wrong else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
