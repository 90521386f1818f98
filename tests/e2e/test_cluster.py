"""Cluster state and supervision end to end: ZooKeeper, a topology master that fails over,
containers that come back, a status that tells the truth. Real ZooKeeper, real processes."""
import json
import os
import re
import signal
import time
from datetime import datetime

import psutil
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError

from corpus import expected as expected_words
from e2e_harness import pace, records_left, summed_counts as counted, wait_until

from squall.state import Kind
from squall.state.status import alive

SENTENCES = 600  # of wc_update's corpus: 6 s at its 100 sentences/s, 10 s at 60/s, across every fault here


def shown(cluster, name):
    out, _ = cluster.squall("show", name, "--json")
    return json.loads(out)


def status(cluster, name):
    out, _ = cluster.squall("list", "--json")
    rows = [r for r in json.loads(out) if r["name"] == name]
    return rows[0]["status"] if rows else None


def process_pid(cluster, name, container, process):
    for p in shown(cluster, name)["processes"]:
        if p["container"] == container and p["process"].split(" ")[0] == process:
            return p["pid"]
    return None


def container_without_spout(cluster, name):
    """A container whose restart replays nothing: a restarted spout would emit its sentences again."""
    plan = shown(cluster, name)["packing_plan"]
    return next(c["id"] for c in plan["containers"] if all(i["component"] != "sentences" for i in c["instances"]))


def words_total(out):
    return sum(counted(out).values())


def quiesce(cluster, name, out):
    """Deactivate and wait until nothing more is counted: no tuple in flight."""
    cluster.squall("deactivate", name)
    last = [-1]

    def settled():
        now = words_total(out)
        done, last[0] = now == last[0], now
        return done

    wait_until(settled, timeout=30, interval=1.0, what="counting to settle while deactivated")


def finish_exactly(cluster, name, out, sentences=SENTENCES):
    expected = expected_words(sentences)
    wait_until(lambda: words_total(out) >= sum(expected.values()), timeout=120, what="every word to be counted")
    time.sleep(1.0)  # the window in which a duplicate would arrive: nothing signals that none is coming
    assert counted(out) == expected
    assert status(cluster, name) == "RUNNING"


def test_word_count_on_zookeeper_with_every_command(zk_cluster, tmp_path):
    out = str(tmp_path / "out")
    os.mkdir(out)
    # the count bolt's metrics waited for below come a bucket at a time (5 s by default)
    zk_cluster.submit("wc_update", f"e2e.out.dir={out}", f"e2e.sentences={SENTENCES}",
                      "topology.builtin.metrics.bucket.size.secs=1")
    assert status(zk_cluster, "wc_update") == "RUNNING"
    data = shown(zk_cluster, "wc_update")
    assert data["status"] == "RUNNING" and data["reasons"] == []
    assert {p["process"].split(" ")[0] for p in data["processes"]} >= {
        "supervisor", "executor", "metricsmgr", "tmaster", "stmgr", "instance"}

    # nothing is readable, or writable, without the credential
    anonymous = KazooClient(hosts=zk_cluster.hosts)
    anonymous.start(timeout=10)
    try:
        for path in (f"{zk_cluster.root}/executionstate/wc_update", f"{zk_cluster.root}/topologies/wc_update"):
            try:
                anonymous.get(path)
                raise AssertionError(f"an anonymous client read {path}")
            except NoAuthError:
                pass
    finally:
        anonymous.stop()
        anonymous.close()

    wait_until(lambda: words_total(out) > 200, what="words to be counted")
    quiesce(zk_cluster, "wc_update", out)
    assert shown(zk_cluster, "wc_update")["confirmed_status"] == "PAUSED"
    assert status(zk_cluster, "wc_update") == "PAUSED"
    victim = container_without_spout(zk_cluster, "wc_update")
    old = process_pid(zk_cluster, "wc_update", victim, "executor")
    zk_cluster.squall("restart", "wc_update", "--container", str(victim))
    assert process_pid(zk_cluster, "wc_update", victim, "executor") not in (None, old)
    zk_cluster.squall("update", "wc_update", "--component-parallelism", "count=3")
    zk_cluster.squall("activate", "wc_update")
    pace(out, 300)  # the commands that disturb it are done: the rest of the corpus at 300 sentences/s, not 100
    wait_until(lambda: status(zk_cluster, "wc_update") == "RUNNING", what="RUNNING after restart and update")
    metrics = wait_until(lambda: (lambda m: m if "count" in m["components"] else None)(
        json.loads(zk_cluster.squall("metrics", "wc_update", "--json")[0])), what="metrics of the count bolt")
    assert metrics["status"] == "RUNNING"
    logs, _ = zk_cluster.squall("logs", "wc_update", "--component", "split")
    assert "instance-" in logs

    finish_exactly(zk_cluster, "wc_update", out)
    zk_cluster.squall("kill", "wc_update")
    assert zk_cluster.processes() == []
    state = zk_cluster.state()
    try:
        assert records_left(state, "wc_update") == []
    finally:
        state.close()
    listed, _ = zk_cluster.squall("list")
    assert listed.strip() == "no topology is running"


def test_a_killed_executor_comes_back_and_the_topology_completes_exactly(zk_cluster, tmp_path):
    """wc_update's own 1,500 sentences, not this module's 600: with 600 the count once completed while the
    status still said DEGRADED after the container's recovery."""
    out = str(tmp_path / "out")
    os.mkdir(out)
    zk_cluster.submit("wc_update", f"e2e.out.dir={out}")
    victim = container_without_spout(zk_cluster, "wc_update")
    wait_until(lambda: words_total(out) > 200, what="words to be counted")
    quiesce(zk_cluster, "wc_update", out)
    executor = process_pid(zk_cluster, "wc_update", victim, "executor")
    instances = {p["pid"] for p in shown(zk_cluster, "wc_update")["processes"]
                 if p["container"] == victim and p["process"].startswith("instance")}
    assert instances, f"container {victim} shows no instance: nothing to see replaced"
    os.kill(executor, signal.SIGKILL)
    seen = set()

    def back():
        seen.add(status(zk_cluster, "wc_update"))
        data = shown(zk_cluster, "wc_update")
        fresh = process_pid(zk_cluster, "wc_update", victim, "executor")
        listed = {p["pid"] for p in data["processes"]
                  if p["container"] == victim and p["process"].startswith("instance")}
        return listed if data["status"] == "PAUSED" and fresh not in (None, executor) else None

    # back: a new executor, PAUSED again, and its instances listed (seen missing just after the executor)
    now = wait_until(back, timeout=60, interval=0.3, what="the container and its instances to come back")
    assert "DEGRADED" in seen or "SUBMITTED" in seen, f"status while the container was down: {seen}"
    assert not now & instances, "the container's instances were not replaced"
    assert not any(alive(pid) for pid in instances)
    zk_cluster.squall("activate", "wc_update")
    pace(out, 300)  # the container is back: the rest of the corpus at 300 sentences/s, not 100
    finish_exactly(zk_cluster, "wc_update", out, sentences=1500)
    zk_cluster.squall("kill", "wc_update")


def _leader(cluster, name):
    state = cluster.state()
    try:
        return state.get(Kind.TMASTER, name), state.get(Kind.PHYSICAL_PLAN, name)
    finally:
        state.close()


def test_the_standby_topology_master_takes_over_while_tuples_keep_flowing(zk_cluster, tmp_path):
    out = str(tmp_path / "out")
    os.mkdir(out)
    zk_cluster.submit("wc_update", f"e2e.out.dir={out}", f"e2e.sentences={SENTENCES}", "squall.tmaster.candidates=2",
                      "e2e.sentences.per.sec=60")
    leader, pplan = _leader(zk_cluster, "wc_update")
    assert pplan.tmaster == leader
    wait_until(lambda: words_total(out) > 100, what="words to be counted")
    os.kill(leader.pid, signal.SIGKILL)
    killed_at = words_total(out)
    # the data plane does not wait for a topology master: counting goes on while the dead one's session
    # runs out (4 s) and the standby rebuilds the physical plan
    wait_until(lambda: words_total(out) > killed_at + 100
               and _leader(zk_cluster, "wc_update")[1].tmaster.pid == leader.pid,
               timeout=20, interval=0.1, what="words counted while no live topology master leads")
    new, pplan = wait_until(lambda: (lambda lp: lp if lp[0] is not None and lp[0].pid != leader.pid
                                     and lp[1].tmaster == lp[0] else None)(_leader(zk_cluster, "wc_update")),
                            timeout=30, what="the standby to lead and rebuild the physical plan")
    assert {i.pid for i in pplan.instances} and len(pplan.instances) == 4
    # the executor restarted the killed candidate: it waits as the new standby
    wait_until(lambda: len([p for p in shown(zk_cluster, "wc_update")["processes"]
                            if p["process"].startswith("tmaster") and p["state"] == "up"]) == 2,
               what="two topology master candidates again")
    pace(out, 300)  # the standby leads: the rest of the corpus at 300 sentences/s, not 60
    finish_exactly(zk_cluster, "wc_update", out)
    zk_cluster.squall("kill", "wc_update")


LOG_TIME = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) ")


def _log_times(path, pattern):
    times = []
    for line in open(path, errors="replace"):
        m = LOG_TIME.match(line)
        if m and pattern in line:
            times.append(datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp())
    return times


def test_a_leader_whose_session_expires_stops_serving_before_the_standby_leads(zk_cluster, tmp_path):
    """Freeze the leader past its session timeout (4 s): ZooKeeper expires its session for real and
    the standby leads. When the old leader runs again it serves nothing: its lease ran out."""
    out = str(tmp_path / "out")
    os.mkdir(out)
    zk_cluster.submit("wc_update", f"e2e.out.dir={out}", f"e2e.sentences={SENTENCES}", "squall.tmaster.candidates=2",
                      "e2e.sentences.per.sec=60")
    leader, _ = _leader(zk_cluster, "wc_update")
    logs = os.path.join(zk_cluster.run_dir("wc_update"), "logs", "container-0")
    wait_until(lambda: words_total(out) > 100, what="words to be counted")
    old = psutil.Process(leader.pid)
    old_log = next(os.path.join(logs, f) for f in os.listdir(logs)
                   if f.startswith("tmaster-") and f"[c0 tmaster {leader.pid}]" in open(os.path.join(logs, f)).read())
    old.suspend()
    frozen_at = time.time()
    try:
        new, _ = wait_until(lambda: (lambda lp: lp if lp[0] is not None and lp[0].pid != leader.pid
                                     and lp[1].tmaster == lp[0] else None)(_leader(zk_cluster, "wc_update")),
                            timeout=30, what="the standby to lead")
    finally:
        old.resume()
    wait_until(lambda: _log_times(old_log, "stopped leading"), timeout=20, what="the old leader to step down")
    published = _log_times(old_log, "physical plan published")
    assert not [t for t in published if t > frozen_at], "the old leader published after it was frozen"
    new_log = next(os.path.join(logs, f) for f in os.listdir(logs)
                   if f.startswith("tmaster-") and f"[c0 tmaster {new.pid}]" in open(os.path.join(logs, f)).read())
    assert min(t for t in _log_times(new_log, "leading:") if t > frozen_at) > frozen_at + 2.0
    assert _leader(zk_cluster, "wc_update")[0].pid == new.pid, "the resumed old leader took over again"
    pace(out, 300)  # the new leader is in place: the rest of the corpus at 300 sentences/s, not 60
    finish_exactly(zk_cluster, "wc_update", out)
    zk_cluster.squall("kill", "wc_update")


def test_a_process_crashing_past_its_budget_fails_the_topology(cluster, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    cluster.submit("fragile", f"e2e.out.dir={out}", "squall.restart.max=2", "squall.restart.backoff.secs=0.2")
    assert status(cluster, "fragile") == "RUNNING"
    (out / "crash").touch()
    wait_until(lambda: status(cluster, "fragile") == "FAILED", timeout=60, what="the topology to fail")
    listed = json.loads(cluster.squall("list", "--json")[0])[0]
    # ticks -> fragile run chained: one process, named after both tasks
    assert listed["reason"].startswith("container 1: instance-2-ticks+1-fragile exited with 1, past its restart "
                                       "budget (2 restarts within 300s)")
    data = shown(cluster, "fragile")
    assert "RuntimeError: planted: the marker file says crash" in data["reasons"][0]
    assert "task 1 (fragile): process() raised on a tuple from task 2 (ticks)" in data["reasons"][0]
    assert [p["state"] for p in data["processes"] if p["process"].startswith("chain ticks[0] task 2 -> fragile")] \
        == ["failed"]
    table, _ = cluster.squall("show", "fragile")
    assert "topology 'fragile': FAILED" in table
    cluster.squall("kill", "fragile")


def test_metrics_survive_a_metrics_manager_restart(cluster, tmp_path):
    out = str(tmp_path / "out")
    os.mkdir(out)
    cluster.submit("wc_update", f"e2e.out.dir={out}", f"e2e.sentences={SENTENCES}",
                   "topology.builtin.metrics.bucket.size.secs=0.5")
    wait_until(lambda: words_total(out) > 200, what="words to be counted")
    # rows on their way as the managers die are sent again to their successors (runtime/metrics_sender.py)
    for container in (1, 2):
        os.kill(process_pid(cluster, "wc_update", container, "metricsmgr"), signal.SIGKILL)
    finish_exactly(cluster, "wc_update", out)
    metrics = os.path.join(cluster.run_dir("wc_update"), "metrics")

    def emitted():
        rows = [json.loads(line) for f in os.listdir(metrics) for line in open(os.path.join(metrics, f))]
        return sum(r["emit_count"] for r in rows if r["component"] == "sentences")

    # every row the spout reported reached the files: its emits add up to every sentence
    wait_until(lambda: emitted() == SENTENCES, timeout=20, what=f"the metrics files to count {SENTENCES} emits")
    cluster.squall("kill", "wc_update")
    assert emitted() == SENTENCES
