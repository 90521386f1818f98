"""Process-level tests: state written as the launcher would, executors started
with the contract's exact command, tuples checked, nothing left running."""
import glob
import json
import os

import psutil
import pytest

from squall.chaining import chains
from squall.idl import schema
from squall.runtime.executor import wanted_processes
from squall.loader import load_topology_file
from squall.runtime.client import TMasterUnreachable, query_metrics
from squall.metrics_schema import FIELD_NAMES
from squall.testing.executors import LocalRun, hand_packing, write_state
from squall.state import Kind, LocalStateManager
from squall.logical import encode_config


def _setup(tmp_path, file, overrides, containers=2):
    plan = load_topology_file(file).plan
    out = tmp_path / "out"
    out.mkdir()
    plan.overrides = encode_config({"rt.out.dir": str(out), **overrides}, "test")
    packing = hand_packing(plan, containers)
    root, run_dir = str(tmp_path / "state"), str(tmp_path / "run")
    write_state(root, run_dir, plan, packing)
    return plan, packing, root, run_dir, out


def _counts(out):
    total = {}
    seen_by = {}
    for f in glob.glob(str(out / "count-*.json")):
        with open(f) as fh:
            for word, n in json.load(fh).items():
                total[word] = total.get(word, 0) + n
                seen_by.setdefault(word, set()).add(f)
    return total, seen_by


def _tree(pids):
    procs = []
    for pid in pids:
        try:
            p = psutil.Process(pid)
            procs.append(p)
            procs.extend(p.children(recursive=True))
        except psutil.NoSuchProcess:
            pass
    return procs


def test_word_topology_end_to_end(tmp_path, topo_path):
    import rt_words

    limit = 3000
    plan, packing, root, run_dir, out = _setup(tmp_path, topo_path("rt_words.py"), {"rt.sentences": limit})
    run = LocalRun(plan.name, root, run_dir, [c.id for c in packing.containers]).start()
    state = LocalStateManager(root)
    try:
        pplan = run.wait_pplan(40)
        assert pplan.status == schema.TopologyStatus.RUNNING
        assert {s.container for s in pplan.stmgrs} == {1, 2}
        assert all(psutil.pid_exists(i.pid) for i in pplan.instances)
        expected = dict(rt_words.expected(limit))
        run.wait_until(lambda: _counts(out)[0] == expected, 30, "exact word counts")
        # fields grouping: every word counted by one task only
        assert all(len(tasks) == 1 for tasks in _counts(out)[1].values())
        processes = _tree(list(p.pid for p in run.procs.values()))
        # executors, tmaster + metrics manager, and per container its stream manager, metrics manager
        # and one process per task, or per chain instance (spout -> split, where packed together)
        wanted = sum(len(wanted_processes(c.id, c, 1, chains(plan))) for c in packing.containers)
        assert len(processes) >= 2 + 2 + wanted and wanted >= 2 * 2 + 4

        # metrics: the file rows follow docs/metrics.md and the tmaster answers queries
        def metrics_complete():
            c = query_metrics(state, plan.name)["components"]
            return (c.get("count", {}).get("executed") == 2 * limit and c.get("spout", {}).get("emitted") == limit
                    and c.get("split", {}).get("executed") == limit)

        run.wait_until(metrics_complete, 20, "metrics at the topology master")
        m = query_metrics(state, plan.name)
        assert set(m["components"]) == {"spout", "split", "count"}
        assert m["components"]["spout"]["emitted"] == limit
        assert m["components"]["split"]["executed"] == limit
        assert sorted(m["tasks"]) == sorted(i.id.task_id for i in pplan.instances)
        def rows():
            return [json.loads(line) for f in glob.glob(os.path.join(run_dir, "metrics", "*.jsonl"))
                    for line in open(f)]

        run.wait_until(lambda: {r["process"] for r in rows()} >= {"instance", "stmgr", "metricsmgr", "tmaster"}, 10,
                       "rows")
        rows = rows()
        assert rows and all(tuple(r) == FIELD_NAMES for r in rows)
        assert {r["process"] for r in rows} >= {"instance", "stmgr", "metricsmgr"}
        assert any(r["process"] == "instance" and r["rss_mb"] > 0 for r in rows)

        # deactivate: the tmaster rewrites the physical plan with the new status
        ex = state.get(Kind.EXECUTION_STATE, plan.name)
        ex.status = schema.TopologyStatus.PAUSED
        state.put(Kind.EXECUTION_STATE, plan.name, ex)
        run.wait_pplan(10, lambda p: p.status == schema.TopologyStatus.PAUSED)
        ex.status = schema.TopologyStatus.RUNNING
        state.put(Kind.EXECUTION_STATE, plan.name, ex)
        run.wait_pplan(10, lambda p: p.status == schema.TopologyStatus.RUNNING)

        # repack: container 2 leaves, its tasks move to container 1; tasks already there are untouched
        before = {i.id.task_id: i.pid for i in run.wait_pplan(5).instances if i.container == 1}
        everything = [i for c in packing.containers for i in c.instances]
        moved = schema.PackingPlan(id="plan-2", algorithm="hand", granularity="task", containers=[
            schema.ContainerPlan(id=1, instances=everything, resources=packing.containers[0].resources,
                                 padding=packing.containers[0].padding)])
        state.put(Kind.PACKING_PLAN, plan.name, moved)
        pplan2 = run.wait_pplan(30, lambda p: p.packing_plan_id == "plan-2")
        assert {i.container for i in pplan2.instances} == {1}
        after = {i.id.task_id: i.pid for i in pplan2.instances}
        assert all(after[t] == pid for t, pid in before.items())
        run.procs[2].wait(timeout=15)
        assert run.procs[2].returncode == 0
    finally:
        run.stop()
    for p in processes:
        assert not p.is_running() or p.status() == psutil.STATUS_ZOMBIE, f"{p} still running"
    with pytest.raises(TMasterUnreachable, match="no running topology master"):
        query_metrics(state, plan.name)


def test_crashing_instance_is_restarted_with_traceback_in_its_log(tmp_path, topo_path):
    plan, packing, root, run_dir, out = _setup(
        tmp_path, topo_path("rt_crash.py"),
        {"squall.restart.backoff.secs": 0.2}, containers=1)
    run = LocalRun(plan.name, root, run_dir, [1]).start()
    try:
        run.wait_pplan(40)
        run.wait_until(lambda: (out / "recovered").exists(), 30, "the restarted bolt")
        logs = glob.glob(os.path.join(run_dir, "logs", "container-1", "instance-*-boom.log"))
        text = open(logs[0]).read()
        assert "Traceback" in text and "RuntimeError: boom on purpose" in text
        executor_log = open(os.path.join(run_dir, "logs", "container-1", "executor.log")).read()
        assert "restarting in" in executor_log
    finally:
        run.stop()
