"""A harness for tests below the scheduler: write a topology's state as the launcher would and run its
executors with the runtime contract's exact command, as the local scheduler does.

Used by tests/runtime; not imported by the runtime processes (it was ``squall.runtime.testing``: a test
harness waits with ``squall.testing.wait_until``, which the runtime layer may not import).
"""
from __future__ import annotations

import os
import secrets
import subprocess
import sys
import time
from typing import Callable, Optional, TypeVar

import psutil

from squall.idl import schema
from squall.processargs import ProcessArgs
from squall.supervision import stop_processes
from squall.testing.wait import wait_until

T = TypeVar("T")


def hand_packing(topology: schema.Topology, containers: int, plan_id: str = "test-plan") -> schema.PackingPlan:
    """Round-robin the tasks of ``topology`` over containers 1..N (task ids as squall.logical.task_ids)."""
    from squall.logical import task_ids

    res = schema.Resources(cpu=0.5, ram_mb=256, disk_mb=256)
    boxes: dict = {c: [] for c in range(1, containers + 1)}
    k = 0
    for component, tasks in sorted(task_ids(topology).items()):
        for index, task in enumerate(tasks):
            boxes[1 + k % containers].append(schema.InstancePlan(
                id=schema.InstanceId(component=component, task_id=task, component_index=index), resources=res))
            k += 1
    return schema.PackingPlan(
        id=plan_id, algorithm="hand", granularity="task",
        containers=[schema.ContainerPlan(id=c, instances=insts, resources=res, padding=res)
                    for c, insts in boxes.items() if insts])


def write_state(state_root: str, run_dir: str, topology: schema.Topology,
                packing: schema.PackingPlan) -> schema.ExecutionState:
    """Topology, packing plan and execution state records, plus the run folder and its state address file."""
    from squall.state import Kind, LocalStateManager, StateAddress

    for sub in ("logs", "metrics"):
        os.makedirs(os.path.join(run_dir, sub), exist_ok=True)
    StateAddress("local", os.path.abspath(state_root)).write(state_file(run_dir))
    execution = schema.ExecutionState(
        topology_name=topology.name, run_id=os.path.basename(run_dir), run_dir=run_dir, submit_time=time.time(),
        submitter="test", status=schema.TopologyStatus.RUNNING, secret=secrets.token_hex(16), cluster="local",
        python=sys.executable)
    with LocalStateManager(state_root) as state:
        state.put(Kind.TOPOLOGY, topology.name, topology)
        state.put(Kind.PACKING_PLAN, topology.name, packing)
        state.put(Kind.EXECUTION_STATE, topology.name, execution)
    return execution


def state_file(run_dir: str) -> str:
    return os.path.join(run_dir, "state.json")


def executor_command(name: str, container: int, run_dir: str, python: Optional[str] = None) -> list[str]:
    """The runtime contract's command, as every launcher builds it (``squall.processargs``)."""
    return ProcessArgs(name, container, state_file(run_dir)).command(python or sys.executable)


class LocalRun:
    """Executors of containers 0..N as detached process groups, like the local scheduler."""

    def __init__(self, name: str, state_root: str, run_dir: str, containers: list):
        self.name, self.state_root, self.run_dir = name, state_root, run_dir
        self.containers = [0] + [c for c in containers if c != 0]
        self.procs: dict[int, psutil.Popen] = {}

    def start(self) -> "LocalRun":
        for c in self.containers:
            self.start_container(c)
        return self

    def start_container(self, c: int) -> None:
        log_dir = os.path.join(self.run_dir, "logs", f"container-{c}")
        os.makedirs(log_dir, exist_ok=True)
        with open(os.path.join(log_dir, "executor.log"), "ab") as logf:
            self.procs[c] = psutil.Popen(executor_command(self.name, c, self.run_dir), stdout=logf,
                                             stderr=subprocess.STDOUT, start_new_session=True)

    def wait_until(self, predicate: Callable[[], T], timeout: float, what: str) -> T:
        """``squall.testing.wait_until``, with the tails of the run's logs in the message when it times out."""
        try:
            return wait_until(predicate, timeout, what, interval=0.1)
        except AssertionError as e:
            raise AssertionError(f"{e}\n{self.logs()}") from None

    def wait_pplan(self, timeout: float = 30.0,
                   predicate: Optional[Callable[[schema.PhysicalPlan], bool]] = None) -> schema.PhysicalPlan:
        """The physical plan once it places every task of the current packing plan (and ``predicate``
        holds); an executor exiting with an error ends the wait at once."""
        from squall.state import Kind, LocalStateManager

        state = LocalStateManager(self.state_root)

        def complete() -> Optional[schema.PhysicalPlan]:
            for c, p in self.procs.items():
                if p.poll() is not None and p.returncode != 0:
                    raise RuntimeError(f"executor of container {c} exited with {p.returncode}:\n{self.logs()}")
            pplan = state.get(Kind.PHYSICAL_PLAN, self.name)
            packing = state.get(Kind.PACKING_PLAN, self.name)
            if pplan is None or packing is None or pplan.packing_plan_id != packing.id:
                return None
            want = {i.id.task_id for c in packing.containers for i in c.instances}
            placed = {i.id.task_id for i in pplan.instances} == want
            return pplan if placed and (predicate is None or predicate(pplan)) else None

        return self.wait_until(complete, timeout, "a complete physical plan")

    def logs(self, tail: int = 30) -> str:
        out = []
        for root, _, files in os.walk(os.path.join(self.run_dir, "logs")):
            for f in sorted(files):
                if f.endswith(".log"):
                    with open(os.path.join(root, f), errors="replace") as fh:
                        lines = fh.readlines()[-tail:]
                    out.append(f"--- {os.path.join(root, f)}\n" + "".join(lines))
        return "\n".join(out)

    def stop(self, timeout: float = 15.0) -> None:
        """SIGTERM the executors (each stops its processes); SIGKILL those still there after ``timeout``."""
        stop_processes(list(self.procs.values()), timeout)
