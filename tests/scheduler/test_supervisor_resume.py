"""The local supervisor is supervised: SIGKILLed, it is restarted by its keeper and resumes (adopts the
executors still running, no duplicates), so a container that dies afterwards is restarted; the counts of
an effectively-once word count stay exact. With local and ZooKeeper state."""
import os
import signal

import psutil
import pytest

from squall.processargs import DaemonArgs, ProcessArgs
from squall.state import Kind
from squall.testing import wait_until
from squall.testing.sinks import committed_counts
from squall.testing.words import counting_topology, expected

SENTENCES = 1500


@pytest.fixture(params=["local", "zookeeper"])
def cluster(request):
    return request.getfixturevalue("squall_cluster" if request.param == "local" else "squall_zk_cluster")


def location(cluster, name):
    return cluster.state.get(Kind.SCHEDULER, name)


def alive(pid):
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def run_processes(cluster, name):
    """(executor containers, supervisor pids, keeper pids) of the live processes of this run."""
    executors, supervisors, keepers = [], [], []
    for p in psutil.process_iter(["cmdline", "status"]):
        if p.info["status"] == psutil.STATUS_ZOMBIE:
            continue
        cmdline = p.info["cmdline"] or []
        args = ProcessArgs.from_cmdline(cmdline)
        daemon = DaemonArgs.from_cmdline(cmdline)
        if args is not None and args.topology == name and args.role == "executor":
            executors.append(args.container)
        elif daemon is not None and daemon.topology == name:
            {"squall.scheduler.supervisor": supervisors, "squall.scheduler.keeper": keepers}.get(
                daemon.module, []).append(p.pid)
    return sorted(executors), supervisors, keepers


def words(out):
    return sum(committed_counts(out)[1].values())


def test_a_killed_supervisor_is_restarted_adopts_its_executors_and_restarts_a_dead_one(cluster, tmp_path):
    out = str(tmp_path / "out")
    os.mkdir(out)
    name = cluster.submit(counting_topology("supervised", SENTENCES, rate=300, out=out), {"squall.restart.backoff.secs": 0.2})
    total = sum(expected(SENTENCES).values())
    wait_until(lambda: words(out) > 0, timeout=60, what="the first committed counts")
    before = location(cluster, name)
    wait_until(lambda: run_processes(cluster, name)[2], timeout=30, what="a keeper for the supervisor")

    os.kill(before.supervisor_pid, signal.SIGKILL)
    after = wait_until(lambda: (loc := location(cluster, name)) is not None and loc.supervisor_pid
                       != before.supervisor_pid and alive(loc.supervisor_pid) and loc, timeout=30,
                       what="a new supervisor to record itself")
    assert after.executor_pids == before.executor_pids, "the new supervisor did not adopt the running executors"
    executors, supervisors, _ = run_processes(cluster, name)
    assert executors == [0, 1, 2] and supervisors == [after.supervisor_pid], "a duplicate was started"

    victim = after.executor_pids[1]
    os.kill(victim, signal.SIGKILL)
    wait_until(lambda: location(cluster, name).executor_pids.get(1) not in (None, victim), timeout=30,
               what="container 1's executor to be restarted")
    wait_until(lambda: cluster.show(name)["status"] == "RUNNING", timeout=60, what="the topology RUNNING again")
    wait_until(lambda: words(out) >= total, timeout=90, what=f"all {total} words committed")
    checkpoint, counts = committed_counts(out)
    want = expected(SENTENCES)
    wrong = {w: counts[w] - want[w] for w in set(counts) | set(want) if counts[w] != want[w]}
    assert not wrong, f"checkpoint {checkpoint}: counted minus expected: {dict(list(wrong.items())[:10])}"

    cluster.kill(name)
    wait_until(lambda: run_processes(cluster, name) == ([], [], []), timeout=30,
               what="no executor, supervisor or keeper left after the kill")
