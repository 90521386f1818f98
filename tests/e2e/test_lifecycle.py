"""Activate/deactivate, scaling with update, restarting, crashing instances."""
import glob
import json
import os
import time

import psutil
from corpus import expected as expected_words
from e2e_harness import summed_counts as counted, wait_until

from squall.state import Kind, LocalStateManager


def emitted(out):
    """Sentences wc_update's spout tasks have emitted (each keeps its position in ``spout-<task>.pos``)."""
    return sum(int(open(path).read() or 0) for path in glob.glob(os.path.join(out, "spout-*.pos")))


def test_deactivate_stops_spouts_and_activate_resumes(cluster, tmp_path):
    out = str(tmp_path / "out")
    os.mkdir(out)
    cluster.submit("wc_update", f"e2e.out.dir={out}", "e2e.sentences=100000", "e2e.sentences.per.sec=200")
    wait_until(lambda: sum(counted(out).values()) > 100, what="words to be counted")
    cluster.squall("deactivate", "wc_update")
    shown, _ = cluster.squall("show", "wc_update", "--json")
    assert json.loads(shown)["confirmed_status"] == "PAUSED"
    wait_until(lambda: counted(out) == expected_words(emitted(out)), timeout=30,
               what="every sentence emitted before the pause to be counted")
    position, paused = emitted(out), sum(counted(out).values())
    time.sleep(2.0)  # the window in which a paused spout would go on emitting: the behaviour under test
    assert emitted(out) == position, "spouts kept emitting while deactivated"
    assert sum(counted(out).values()) == paused
    cluster.squall("activate", "wc_update")
    wait_until(lambda: sum(counted(out).values()) > paused + 100, what="counting to resume")
    cluster.squall("kill", "wc_update")


def test_crashing_instance_is_restarted_and_logged(cluster, tmp_path):
    out = str(tmp_path / "out")
    os.mkdir(out)
    cluster.submit("crashy", f"e2e.out.dir={out}")
    run_dir = cluster.run_dir("crashy")
    logs = glob.glob(os.path.join(run_dir, "logs", "container-*", "instance-*-boom.log"))
    assert len(logs) == 1
    # the bolt's first process raised on its first tuple (submit waited for the
    # restarted one to stay up); the traceback is in the instance's own log
    assert "ZeroDivisionError: planted failure" in open(logs[0]).read()
    assert len(glob.glob(os.path.join(out, "started-*"))) == 2
    logged, _ = cluster.squall("logs", "crashy", "--component", "boom")
    assert "planted failure" in logged
    cluster.squall("kill", "crashy")


def test_restart_container_replaces_its_processes(cluster, tmp_path):
    out = str(tmp_path / "out")
    os.mkdir(out)
    cluster.submit("wc_update", f"e2e.out.dir={out}", "e2e.sentences=100000")
    state = LocalStateManager(os.path.join(cluster.home, "state"))
    old = state.get(Kind.SCHEDULER, "wc_update").executor_pids
    cluster.squall("restart", "wc_update", "--container", "1")
    new = state.get(Kind.SCHEDULER, "wc_update").executor_pids
    assert new[1] != old[1] and new[2] == old[2] and new[0] == old[0]
    assert not psutil.pid_exists(old[1]) or psutil.Process(old[1]).status() == psutil.STATUS_ZOMBIE
    before = sum(counted(out).values())
    wait_until(lambda: sum(counted(out).values()) > before + 100, timeout=60, what="counting after restart")
    cluster.squall("restart", "wc_update", "--container", "7", expect=2)
    cluster.squall("kill", "wc_update")


def test_user_errors_exit_2(cluster):
    cluster.squall("kill", "nope", expect=2)
    cluster.squall("show", "nope", expect=2)
    cluster.squall("activate", "nope", expect=2)
    cluster.squall("update", "nope", "--component-parallelism", "x=2", expect=2)
