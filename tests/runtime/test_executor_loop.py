"""The executor's loop with real child processes (sleeping stand-ins for its roles,
tests/runtime/sleepy_executor.py): a child that dies is restarted, a packing-plan change reaches the loop
through its queue and starts and stops only the difference, SIGTERM stops every child (SIGKILL for one
that ignores SIGTERM) and the executor exits."""
import os
import signal
import subprocess
import sys

import psutil
import pytest

from squall.loader import load_topology_file
from squall.processargs import ProcessArgs
from squall.testing.executors import hand_packing, state_file, write_state
from squall.state import Kind, LocalStateManager
from squall.testing import wait_until
from squall.topology import encode_config

HERE = os.path.dirname(os.path.abspath(__file__))
CONFIG = {"squall.executor.kill.grace.secs": 1.0, "squall.restart.backoff.secs": 0.1,
          "squall.submit.timeout.secs": 1.0, "squall.executor.drain.secs": 0.0, "squall.chaining": "off"}


class Run:
    def __init__(self, tmp_path, topo_path, ignore_sigterm=False):
        self.plan = load_topology_file(topo_path("rt_words.py")).plan
        self.plan.overrides = encode_config(CONFIG, "test")
        self.packing = hand_packing(self.plan, 1)
        self.root, run_dir = str(tmp_path / "state"), str(tmp_path / "run")
        write_state(self.root, run_dir, self.plan, self.packing)
        env = dict(os.environ, SLEEPY_IGNORE_SIGTERM="1" if ignore_sigterm else "")
        command = [sys.executable, os.path.join(HERE, "sleepy_executor.py"),
                   *ProcessArgs(self.plan.name, 1, state_file(run_dir)).argv()]
        self.log = open(tmp_path / "executor.log", "wb")
        self.executor = psutil.Popen(command, stdout=self.log, stderr=subprocess.STDOUT, env=env)

    def children(self):
        """process name -> pid of the executor's live children."""
        out = {}
        for child in self.executor.children():
            try:
                if child.status() != psutil.STATUS_ZOMBIE:
                    out[child.cmdline()[-1]] = child.pid
            except psutil.NoSuchProcess:
                pass
        return out

    def wanted(self, packing):
        names = {"metricsmgr", "stmgr"}
        for c in packing.containers:
            names |= {f"instance-{i.id.task_id}-{i.id.component}" for i in c.instances}
        return names

    def close(self):
        if self.executor.poll() is None:
            self.executor.kill()
            self.executor.wait()
        self.log.close()


@pytest.fixture
def run(tmp_path, topo_path):
    r = Run(tmp_path, topo_path)
    yield r
    r.close()


def test_a_child_that_dies_is_restarted(run):
    wanted = run.wanted(run.packing)
    first = wait_until(lambda: (c := run.children()).keys() == wanted and c, timeout=30,
                       what=f"the executor to start {sorted(wanted)}")
    victim = sorted(n for n in wanted if n.startswith("instance"))[0]
    os.kill(first[victim], signal.SIGKILL)
    again = wait_until(lambda: (c := run.children()).get(victim) not in (None, first[victim]) and c, timeout=30,
                       what=f"{victim} to be restarted")
    assert {n: p for n, p in again.items() if n != victim} == {n: p for n, p in first.items() if n != victim}


def test_a_plan_change_starts_and_stops_only_the_difference(run):
    wanted = run.wanted(run.packing)
    first = wait_until(lambda: (c := run.children()).keys() == wanted and c, timeout=30, what="the first plan")
    changed = hand_packing(run.plan, 1, plan_id="second")
    instances = changed.containers[0].instances
    gone = instances.pop()  # one task leaves the container
    with LocalStateManager(run.root) as state:
        state.put(Kind.PACKING_PLAN, run.plan.name, changed)
    left = f"instance-{gone.id.task_id}-{gone.id.component}"
    now = wait_until(lambda: (c := run.children()).keys() == wanted - {left} and c, timeout=30,
                     what=f"{left} to stop once it left the plan")
    assert now == {n: p for n, p in first.items() if n != left}, "a process that stayed in the plan was restarted"
    changed.containers[0].instances.append(gone)
    changed.id = "third"
    with LocalStateManager(run.root) as state:
        state.put(Kind.PACKING_PLAN, run.plan.name, changed)
    back = wait_until(lambda: (c := run.children()).keys() == wanted and c, timeout=30, what=f"{left} back")
    assert {n: p for n, p in back.items() if n != left} == now


@pytest.mark.parametrize("ignore_sigterm", [False, True])
def test_sigterm_stops_every_child_and_the_executor_exits(tmp_path, topo_path, ignore_sigterm):
    run = Run(tmp_path, topo_path, ignore_sigterm=ignore_sigterm)
    try:
        wanted = run.wanted(run.packing)
        children = wait_until(lambda: (c := run.children()).keys() == wanted and c, timeout=30,
                              what="every child")
        run.executor.send_signal(signal.SIGTERM)
        assert run.executor.wait(timeout=30) == 0
        left = [pid for pid in children.values() if psutil.pid_exists(pid)
                and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE]
        assert left == [], "children outlived their executor"
    finally:
        run.close()
