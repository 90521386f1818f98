"""Process figures of the metrics rows: cpu_percent is the process's CPU use over its bucket.

Which process's figure lands in which row is checked here; how close the figure is to the CPU the
process used is bench/bounds.py's measure (a threshold on CPU would be a timing assertion)."""
import glob
import json
import os
import statistics
import subprocess
import sys
import time
import types

from squall.idl import schema
from squall.runtime.metricsmgr import MetricsManager
from squall.runtime.protocol import control_frame
from squall.testing.executors import LocalRun

from test_process import _setup

BUSY, IDLE = 1, 2  # task ids of the two reporting processes' rows


def _row(pid, task):
    return schema.MetricsRow(ts=time.time(), interval_secs=0.4, process="instance", component="c", task_id=task,
                             emit_count=0, execute_count=0, ack_count=0, fail_count=0, queue_depth=0,
                             backpressure_ms=0.0, user="{}", pid=pid, container=1)


def test_busy_process_reports_its_cpu_in_every_bucket(tmp_path):
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    idle = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    env = types.SimpleNamespace(args=types.SimpleNamespace(container=1), run_dir=str(tmp_path), packing=None,
                                name="t", execution=types.SimpleNamespace(run_id="r"),
                                metrics_dir=str(tmp_path / "metrics"))
    mm = MetricsManager(env)
    conn = types.SimpleNamespace(peer=types.SimpleNamespace(written=0), write=lambda frame: None)
    try:
        time.sleep(0.4)  # these sleeps are the buckets the figures are measured over: the behaviour under test
        # a row in each bucket, but none in one (a process's bucket drifts against the manager's),
        # then two in the next (the late row and the following one)
        for rows_in_bucket in (1, 1, 0, 2, 1):
            for _ in range(rows_in_bucket):
                mm.frames(conn, [control_frame(metrics=[_row(busy.pid, BUSY), _row(idle.pid, IDLE)])])
                time.sleep(0.3)
            mm.flush(time.time(), 0.4)
            time.sleep(0.3)
    finally:
        busy.kill()
        idle.kill()
    lines = [json.loads(line) for line in open(mm.path)]
    busy_cpu = [r["cpu_percent"] for r in lines if r["task_id"] == BUSY]
    idle_cpu = [r["cpu_percent"] for r in lines if r["task_id"] == IDLE]
    assert len(busy_cpu) == len(idle_cpu) == 5
    # a spinning process and a sleeping one, measured over the same buckets: each row has its own process's
    # figure (crossed pids, or a figure of the metrics manager itself, would not order them in every row)
    assert all(busy > idle >= 0 for busy, idle in zip(busy_cpu, idle_cpu)), (busy_cpu, idle_cpu)


def test_busy_instance_reports_its_cpu(tmp_path, topo_path):
    plan, packing, root, run_dir, out = _setup(tmp_path, topo_path("rt_busy.py"), {}, containers=1)
    run = LocalRun(plan.name, root, run_dir, [c.id for c in packing.containers]).start()

    def spout_rows():
        rows = [json.loads(line) for f in glob.glob(os.path.join(run_dir, "metrics", "*.jsonl")) for line in open(f)]
        return [r for r in rows if r["component"] == "busy" and r["emit_count"] > 0]

    try:
        run.wait_pplan(40)
        run.wait_until(lambda: len(spout_rows()) >= 6, 30, "six metrics rows of the busy spout")
        cpu = [r["cpu_percent"] for r in spout_rows()]
    finally:
        run.stop()
    # the spout spins in next_tuple all the time: its process's CPU is measured, not left at zero
    assert all(isinstance(c, (int, float)) and c >= 0 for c in cpu), cpu
    assert statistics.median(cpu) > 0, cpu
