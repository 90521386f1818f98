"""``squall health`` on a running topology (real processes on the local cluster): recommend mode shows its
decision and changes nothing; the mode switched while running, and auto mode scales the over-loaded bolt up
with every id acked (at least once); the history kept across a restart of the health manager's process; the
other actions carried out on the same run; a hot key reported as skew with its keys sampled; bad input
refused in one line with exit status 2."""
import glob
import json
import os
import signal
import time

from squall.cli import main
from squall.conf import base_config
from squall.health.actuate import carry_out
from squall.health.model import Action
from squall.metrics_schema import HEALTH_COMPONENT
from squall.processargs import ProcessArgs
from squall.state import Kind
from squall.testing import wait_until
from squall.testing.processes import processes_under

TOPOLOGIES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "topologies")
IDS = 25_000  # 25 s of load at 1,000 ids/s: recommend, then auto, scale up within it; the rest unloaded


def squall(capsys, *argv, expect=0):
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert code == expect, f"squall {' '.join(argv)} exited {code}:\n{out}\n{err}"
    return out, err


def health(capsys, name):
    return json.loads(squall(capsys, "health", name, "--json")[0])


def parallelism(cluster, name, component):
    plan = cluster.state.get(Kind.PACKING_PLAN, name)
    return sum(1 for c in plan.containers for i in c.instances if i.id.component == component)


def acked(out_dir):
    ids = []
    for path in glob.glob(os.path.join(out_dir, "acked-*.json")):
        with open(path) as f:
            ids += json.load(f)["acked"]
    return ids


def unload(out_dir):
    """Nothing is left to load: the rest of the ids go as fast as the spout and an unslowed sink take them
    (through the files ``health_paced.py`` watches while running)."""
    for name, value in (("rate", 100_000), ("sleep.ms", 0)):
        with open(os.path.join(out_dir, name), "w") as f:
            f.write(str(value))


def health_process(cluster):
    return next(p for p in processes_under(cluster.home)
                if (ProcessArgs.from_cmdline(p.cmdline()) or ProcessArgs("", 0, "")).role == "health")


def carry_out_the_other_actions(cluster) -> None:
    """The resolutions the scale-up above did not exercise, through ``health/actuate.py`` as auto mode calls
    it: pending set live, a task's container restarted, a component resized."""
    state = cluster.state
    carry_out(state, "paced", Action("set_pending", pending=64), base_config())
    wait_until(lambda: (state.get(Kind.PHYSICAL_PLAN, "paced").max_spout_pending or 0) == 64, timeout=20,
               what="the topology master to hand out pending 64 with the physical plan")

    sink_task = min(i.id.task_id for c in state.get(Kind.PACKING_PLAN, "paced").containers for i in c.instances
                    if i.id.component == "sink")

    def sink_pid():
        return next(p.pid for p in processes_under(cluster.home)
                    if (ProcessArgs.from_cmdline(p.cmdline()) or ProcessArgs("", 0, "")).task == sink_task)

    before = sink_pid()
    carry_out(state, "paced", Action("restart_task", "sink", task_id=sink_task), base_config())
    assert sink_pid() != before

    carry_out(state, "paced", Action("resize", "sink", cpu=0.3, ram_mb=192), base_config())
    sinks = {(i.resources.cpu, i.resources.ram_mb) for c in state.get(Kind.PACKING_PLAN, "paced").containers
             for i in c.instances if i.id.component == "sink"}
    assert sinks == {(0.3, 192)}


def test_an_unknown_topology_is_one_line_and_status_2(squall_cluster, capsys):
    out, err = squall(capsys, "health", "nosuch", expect=2)
    assert out == "" and err.strip().count("\n") == 0 and "no topology named 'nosuch' is running" in err


def test_recommend_shows_the_decision_changes_nothing_and_auto_then_applies_it(squall_cluster, capsys, tmp_path):
    """The load of ``paced`` (1,000 ids/s) is twice what its sink carries at parallelism 1 (2 ms a tuple)."""
    cluster = squall_cluster
    out_dir = str(tmp_path / "out")
    os.mkdir(out_dir)
    squall(capsys, "submit", os.path.join(TOPOLOGIES, "health_paced.py"),
           "--config-property", f"health.out.dir={out_dir}", "--config-property", f"health.ids={IDS}",
           "--config-property", "squall.health.interval.secs=1",
           "--config-property", "squall.health.stabilization.secs=2",  # the pending tuner may act first
           "--config-property", "topology.builtin.metrics.bucket.size.secs=1")  # a round's window holds a bucket

    def scale_up(h):
        return next((d for d in h["history"] if d["status"] == "recommended" and d["action"]["kind"] == "scale"
                     and d["component"] == "sink"), None)

    shown = wait_until(lambda: (lambda h: h if scale_up(h) else None)(health(capsys, "paced")), timeout=60,
                       what="a recommendation to scale the sink up, in recommend mode")
    recommended = scale_up(shown)
    assert shown["mode"] == "recommend" and shown["pending"] is not None
    assert recommended["action"]["parallelism"] > 1 and recommended["evidence"] and recommended["formula"]
    assert parallelism(cluster, "paced", "sink") == 1  # recommend changes nothing

    out, err = squall(capsys, "health", "paced", "--mode", "bogus", expect=2)
    assert err.strip() == "squall: error: --mode 'bogus': expected one of off, recommend, auto"
    assert health(capsys, "paced")["mode"] == "recommend"

    text = squall(capsys, "health", "paced")[0]
    assert "recommended: " in text and recommended["id"] in text

    squall(capsys, "health", "paced", "--mode", "auto")
    wait_until(lambda: parallelism(cluster, "paced", "sink") > 1, timeout=90, what="auto mode to scale the sink up")
    applied = wait_until(lambda: [d for d in health(capsys, "paced")["history"]
                                  if d["status"] in ("applied", "effective", "ineffective")], timeout=30,
                         what="the applied decision in the history")
    decided = {d["id"] for d in health(capsys, "paced")["history"]}

    old = health_process(cluster)
    os.kill(old.pid, signal.SIGKILL)
    killed_at = time.time()
    wait_until(lambda: health(capsys, "paced")["observed_at"] > killed_at, timeout=30,
               what="a round of the restarted health manager")
    assert health_process(cluster).pid != old.pid
    after = health(capsys, "paced")
    assert decided <= {d["id"] for d in after["history"]}, "the restarted health manager lost its history"
    assert applied[0]["id"] in {d["id"] for d in after["history"] if d["status"] != "recommended"}
    assert after["mode"] == "auto"

    squall(capsys, "health", "paced", "--mode", "off")  # no action of its own from here on
    switched = time.time()
    wait_until(lambda: (lambda h: h["mode"] == "off" and h["observed_at"] > switched)(health(capsys, "paced")),
               timeout=60, what="the health manager's round in mode off")
    carry_out_the_other_actions(cluster)
    unload(out_dir)
    wait_until(lambda: len(set(acked(out_dir))) == IDS, timeout=90, what=f"all {IDS} ids acked")
    assert sorted(set(acked(out_dir))) == list(range(IDS))
    rows = [r for path in glob.glob(os.path.join(cluster.run_dir("paced"), "metrics", "*.jsonl"))
            for r in map(json.loads, open(path)) if r["component"] == HEALTH_COMPONENT]
    # the health manager's own rows, through a connection a send, across its SIGKILL: each in the file once
    assert len(rows) >= 5 and len({r["ts"] for r in rows}) == len(rows)
    squall(capsys, "kill", "paced")


def test_a_hot_key_is_skew_not_a_scale_up_and_its_keys_are_sampled(squall_cluster, capsys):
    """9 in 10 keys are "hot": fields grouping sends them all to one of the two tasks, which saturates."""
    squall(capsys, "submit", os.path.join(TOPOLOGIES, "health_skew.py"),
           "--config-property", "squall.health.interval.secs=1", "--config-property", "squall.health.key.sample.secs=3",
           "--config-property", "topology.builtin.metrics.bucket.size.secs=1")  # a round's window holds a bucket

    def sampled_skew(h):
        return next((d for d in h["history"] if d["diagnosis"] == "skew" and d["evidence"].get("hot_keys")), None)

    skew = wait_until(lambda: sampled_skew(health(capsys, "skewed")), timeout=120,
                      what="a skew report naming the sampled hot keys")
    hot = skew["evidence"]["hot_keys"][0]
    assert hot["key"] == "hot" and hot["share"] >= 0.8 and hot["task"] == skew["evidence"]["hot_task"]
    assert "hot keys 'hot'" in skew["summary"] and skew["action"]["kind"] == "none"
    history = health(capsys, "skewed")["history"]
    assert not [d for d in history if d["action"]["kind"] == "scale"]  # a hot key is not more tasks' to fix
    assert parallelism(squall_cluster, "skewed", "slow") == 2
    squall(capsys, "kill", "skewed")

