"""Recovery on the local cluster: a SIGKILLed container, a SIGKILLed topology master.

For each state manager (local directory, and ZooKeeper on a real server on
loopback), word count (bench/topologies/wc_bench.py, paced) runs with two
topology master candidates, and the script measures:

- submit: seconds from `squall submit` to RUNNING (the baseline);
- container recovery: seconds from SIGKILL of a container's executor until
  the topology is RUNNING again with a new executor, and that as a ratio to
  the submit time of the same invocation;
- stream manager recovery: seconds from SIGKILL of a container's stream
  manager until the topology is RUNNING again (its instances rejoined the
  restarted one), the instances restarted by it (0: they keep running), and
  the words counted per second meanwhile as a ratio to just before;
- failover: seconds from SIGKILL of the leading topology master until the
  standby has published the rebuilt physical plan, and that as a ratio to
  the ZooKeeper session timeout (a dead leader's lock lasts that long);
- flow during failover: words counted per second between the kill and the
  new plan, as a ratio to the words per second just before the kill (the
  data plane does not wait for a topology master: about 1.0).

    .venv/bin/python bench/recovery.py [--rounds 3] [--session-timeout 4]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOPOLOGY = os.path.join(HERE, "topologies", "wc_bench.py")
NAME = "wc_bench"


class Run:
    def __init__(self, manager: str, session_timeout: float, zookeeper: object):
        self.home = tempfile.mkdtemp(prefix="squall-recovery-")
        self.out = os.path.join(self.home, "out")
        os.makedirs(self.out)
        self.env = dict(os.environ, SQUALL_HOME=self.home)
        self.options: list = []
        if manager == "zookeeper":
            path = os.path.join(self.home, "cluster.yaml")
            with open(path, "w") as f:
                f.write(f"squall.state.manager: zookeeper\nsquall.state.zookeeper.connect: '{zookeeper.hosts}'\n"
                        f"squall.state.root: '/bench-{os.getpid()}-{time.monotonic_ns()}'\n"
                        f"squall.state.zookeeper.auth: 'bench:bench'\n"
                        f"squall.state.zookeeper.session.timeout.secs: {session_timeout}\n")
            self.options = ["--config-path", path]

    def squall(self, *args: str) -> str:
        done = subprocess.run([sys.executable, "-m", "squall.cli", *args, *self.options], env=self.env,
                              check=True, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        return done.stdout

    def show(self) -> dict:
        return json.loads(self.squall("show", NAME, "--json"))

    def words(self) -> int:
        total = 0
        for name in os.listdir(self.out):
            with open(os.path.join(self.out, name)) as f:
                lines = [line for line in f if line.endswith("\n")]
            if lines:
                total += json.loads(lines[-1])["words"]
        return total

    def wait(self, predicate: object, timeout: float = 120.0) -> float:
        start = time.monotonic()
        while not predicate():
            if time.monotonic() - start > timeout:
                raise TimeoutError("the topology did not recover")
            time.sleep(0.05)
        return time.monotonic() - start

    def close(self) -> None:
        try:
            self.squall("kill", NAME)
        finally:
            shutil.rmtree(self.home, ignore_errors=True)


def pid_of(data: dict, container: int, process: str) -> int:
    return next(p["pid"] for p in data["processes"]
                if p["container"] == container and p["process"].startswith(process))


def instance_pids(data: dict) -> dict:
    return {p["process"]: p["pid"] for p in data["processes"] if p["process"].startswith("instance ")}


def kill_stream_manager(run: Run, victim: int) -> tuple:
    """SIGKILL container ``victim``'s stream manager: (seconds until RUNNING again with a new one,
    instances whose pid changed, words/s meanwhile as a ratio to the 2 s before)."""
    before = run.show()
    stmgr, pids = pid_of(before, victim, "stmgr"), instance_pids(before)
    words, at = run.words(), time.monotonic()
    time.sleep(2)
    rate_before = (run.words() - words) / (time.monotonic() - at)
    words, at = run.words(), time.monotonic()
    os.kill(stmgr, signal.SIGKILL)
    took = run.wait(lambda: (lambda d: d["status"] == "RUNNING" and pid_of(d, victim, "stmgr") != stmgr)(run.show()))
    rate = (run.words() - words) / (time.monotonic() - at)
    after = instance_pids(run.show())
    return took, sum(1 for k, pid in pids.items() if after.get(k) != pid), rate / rate_before if rate_before else 0.0


def one_round(manager: str, session_timeout: float, zookeeper: object) -> dict:
    run = Run(manager, session_timeout, zookeeper)
    try:
        t0 = time.monotonic()
        run.squall("submit", TOPOLOGY, "--config-property", f"bench.out.dir={run.out}",
                   "--config-property", "bench.rate=2000", "--config-property", "squall.tmaster.candidates=2",
                   "--config-property", "topology.tick.tuple.freq.secs=0.1")
        submit = time.monotonic() - t0
        time.sleep(3)
        victim = max(c["id"] for c in run.show()["packing_plan"]["containers"])
        executor = pid_of(run.show(), victim, "executor")
        os.kill(executor, signal.SIGKILL)
        recovery = run.wait(lambda: (lambda d: d["status"] == "RUNNING"
                                     and pid_of(d, victim, "executor") != executor)(run.show()))
        time.sleep(3)
        stmgr_recovery, restarted, stmgr_flow = kill_stream_manager(run, victim)
        time.sleep(3)
        leader = next(p for p in run.show()["processes"] if p["process"].endswith("(leader)"))
        before_words, before_at = run.words(), time.monotonic()
        time.sleep(2)
        rate_before = (run.words() - before_words) / (time.monotonic() - before_at)
        killed_words, killed_at = run.words(), time.monotonic()
        os.kill(leader["pid"], signal.SIGKILL)

        def new_plan() -> bool:
            d = run.show()
            return d["status"] == "RUNNING" and any(p["process"].endswith("(leader)") and p["pid"] != leader["pid"]
                                                   for p in d["processes"])

        failover = run.wait(new_plan)
        rate_during = (run.words() - killed_words) / (time.monotonic() - killed_at)
        return {"submit": submit, "recovery": recovery, "stmgr": stmgr_recovery, "restarted": restarted,
                "stmgr flow": stmgr_flow, "failover": failover,
                "flow": rate_during / rate_before if rate_before else float("nan")}
    finally:
        run.close()


def main() -> int:
    from squall.state.zkserver import ZooKeeperServer

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--session-timeout", type=float, default=4.0)
    args = p.parse_args()
    server = ZooKeeperServer()
    server.start()
    try:
        print(f"{'state':<10} {'submit s':>9} {'recovery s':>11} {'x submit':>9} {'stmgr s':>8} {'restarted':>9} "
              f"{'flow':>6} {'failover s':>11} {'x session':>10} {'flow':>6}   (median of {args.rounds} rounds)")
        for manager in ("local", "zookeeper"):
            rounds = [one_round(manager, args.session_timeout, server) for _ in range(args.rounds)]
            med = {k: statistics.median(r[k] for r in rounds) for k in rounds[0]}
            # a local leader's lock goes with its process: no session timeout to compare with
            session = f"{med['failover'] / args.session_timeout:>10.2f}" if manager == "zookeeper" else f"{'-':>10}"
            print(f"{manager:<10} {med['submit']:>9.2f} {med['recovery']:>11.2f} "
                  f"{med['recovery'] / med['submit']:>9.2f} {med['stmgr']:>8.2f} {med['restarted']:>9g} "
                  f"{med['stmgr flow']:>6.2f} {med['failover']:>11.2f} {session} {med['flow']:>6.2f}")
    finally:
        server.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
