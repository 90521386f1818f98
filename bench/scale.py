"""The control plane at 10, 100 and 1,000 containers x 20 instances: figures as curves, growth per 10x.

    .venv/bin/python bench/scale.py [--containers 10,100,1000] [--only builder,control]

- builder: ``PlanBuilder`` (runtime/tmaster.py) alone: every container registers, and after each
  registration the plan is asked for, as the topology master does (``publish``): seconds in all.
- control: one topology per size in a real ZooKeeper (state/zkserver.py), its records written as the
  launcher writes them, two real topology-master processes (a leader and a standby), and every
  container's stream manager and metrics manager simulated in this process
  (``squall.testing.control_plane``: real sockets, the real protocol, default heartbeat and metrics
  intervals). Measured: registration -> physical plan at every stream manager (seconds, and the leader's
  cpu seconds), the plan's frame and the bytes sent to all; the leader's cpu share and memory under
  heartbeats and metrics (two intervals); a plan update (one component scaled by one instance per
  container, written as ``squall update`` writes it) until every stream manager has the new plan;
  ZooKeeper nodes and bytes of the topology (with each container's record, as executors write them);
  the UI's pages and REST API for the topology (a real ``squall ui`` process, as in production, reading
  the same ZooKeeper state: the list, the topology and the packing page, median of 3, with the cpu
  seconds of the UI process and of the leader meanwhile); a failover (the leader SIGKILLed: seconds
  until the standby leads, the ZooKeeper session timeout; then until every stream manager registered
  again and has its plan).

Each figure is printed as a curve over the sizes with its growth factor per 10x (linear: 10x). Prints
figures, asserts nothing (tests/runtime/test_control_plane_fleet.py checks the exact results).
"""
from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from typing import Dict, List, Optional

SECTIONS = ("builder", "ui-cpu", "control")
UI_PATHS = {"list page": "/", "topology page": "/topology/{name}", "packing page": "/topology/{name}/packing",
            "list API": "/api/v1/topology/summary", "topology API": "/api/v1/topology/{name}",
            "packing API": "/api/v1/topology/{name}/packing"}


# builder ----------------------------------------------------------------------------------------------
def builder_figures(containers: int) -> Dict[str, float]:
    from squall.idl import schema
    from squall.packing.pack import pack
    from squall.runtime.tmaster import PlanBuilder
    from squall.testing.control_plane import SimulatedContainer, instance_locations, scale_topology

    topology = scale_topology(f"scale-{containers}", containers)
    packing = pack(topology)
    regs = [SimulatedContainer(c.id, instance_locations(c)).registration() for c in packing.containers]
    location = schema.TMasterLocation(topology_name=topology.name, host="h", control_port=1, pid=1, run_id="r")
    started = time.perf_counter()
    builder = PlanBuilder(topology.name, location, packing, schema.TopologyStatus.RUNNING)
    for reg in regs:
        builder.register(reg)
        builder.build()
    return {"PlanBuilder: register all + build after each, s": time.perf_counter() - started}


# ui-cpu -----------------------------------------------------------------------------------------------
def ui_cpu_figures(containers: int) -> Dict[str, float]:
    """CPU seconds of the UI's data for each API answer (the view and its JSON), in this process, so a
    loaded machine does not inflate them: a local state manager holding the topology's records, its
    physical plan and every container's record; no topology master (the metrics part is the master's)."""
    import json

    from squall.idl import schema
    from squall.packing.pack import pack
    from squall.state import Kind, LocalStateManager, StateAddress
    from squall.testing.control_plane import SimulatedContainer, instance_locations, scale_topology, write_run
    from squall.ui import views
    from squall.ui.metrics import MetricsCache

    name = f"scale-{containers}"
    folder = tempfile.mkdtemp(prefix=f"squall-scale-ui-{containers}-")
    figures: Dict[str, float] = {}
    with LocalStateManager(os.path.join(folder, "state")) as state:
        topology = scale_topology(name, containers)
        plan = pack(topology)
        write_run(state, StateAddress("local", os.path.join(folder, "state")), os.path.join(folder, "run"),
                  topology, plan)
        regs = [SimulatedContainer(c.id, instance_locations(c)).registration() for c in plan.containers]
        state.put(Kind.PHYSICAL_PLAN, name, schema.PhysicalPlan(
            topology_name=name, packing_plan_id=plan.id, status=schema.TopologyStatus.RUNNING,
            tmaster=schema.TMasterLocation(topology_name=name, host="h", control_port=1, pid=1, run_id="r"),
            stmgrs=[r.stmgr for r in regs], instances=[i for r in regs for i in r.instances]))
        write_container_records(state, name, plan)
        metrics = MetricsCache(state)
        answers = {"list API": lambda: {"topologies": views.topologies(state)},
                   "topology API": lambda: views.topology(state, metrics, name, "10m"),
                   "packing API": lambda: views.packing(state, metrics, name)}
        for what, answer in answers.items():
            times = []
            for _ in range(3):  # the first read decodes the records; the others find them decoded
                started = time.process_time()
                size = len(json.dumps(answer(), default=str))
                times.append(time.process_time() - started)
            figures[f"{what}: first, cpu s"] = times[0]
            figures[f"{what}: again, cpu s"] = statistics.median(times[1:])
            figures[f"  {what} size, KB"] = size / 1024
    return figures


# control ----------------------------------------------------------------------------------------------
def control_figures(containers: int, zk_hosts: str, figures: Dict[str, float],
                    heartbeat_timeout: Optional[float] = None) -> None:
    """Fill ``figures`` as they are measured (a wait that times out leaves the ones before it)."""
    import psutil

    from squall.conf import base_config
    from squall.packing.pack import pack
    from squall.scheduler import manager
    from squall.scheduler.changes import TopologyUpdate
    from squall.state import Kind, StateAddress
    from squall.state.zookeeper import ZooKeeperStateManager
    from squall.testing import wait_until
    from squall.testing.control_plane import ControlPlaneFleet, scale_topology, tmaster_command, write_run

    name = f"scale-{containers}"
    address = StateAddress("zookeeper", f"/squall-scale-{uuid.uuid4().hex[:8]}", zk_hosts,
                           f"squall:{uuid.uuid4().hex}")
    state = ZooKeeperStateManager(address.connect, address.root, connect_timeout=60,  # a loaded machine
                                  session_timeout=address.session_timeout, auth=address.auth)
    state.start()
    run_dir = tempfile.mkdtemp(prefix=f"squall-scale-{containers}-")
    topology = scale_topology(name, containers, None if heartbeat_timeout is None else {
        "squall.heartbeat.timeout.secs": heartbeat_timeout})
    packing = pack(topology)
    execution = write_run(state, address, run_dir, topology, packing)
    write_container_records(state, name, packing)
    config = topology_config(topology)
    tmasters = [subprocess.Popen(tmaster_command(name, run_dir), stdout=subprocess.DEVNULL,
                                 stderr=open(os.path.join(run_dir, "logs", f"tmaster-{k}.log"), "wb"))
                for k in range(2)]
    fleet = ControlPlaneFleet(state, name, execution.secret, float(config["squall.heartbeat.interval.secs"]),
                              float(config["topology.builtin.metrics.bucket.size.secs"]),
                              int(config["squall.runtime.frame.max.mb"]) * 1024 * 1024)
    try:
        leader_pid = wait_until(lambda: getattr(state.get(Kind.TMASTER, name), "pid", None), 60, "a leader")
        leader = psutil.Process(leader_pid)
        standby = next(p for p in tmasters if p.pid != leader_pid)
        timeout = 60 + containers * 0.5

        # registration -> the physical plan at every stream manager
        cpu0, started = _cpu(leader), time.monotonic()
        fleet.start()
        wait_until(lambda: fleet.call(lambda: fleet.all_have_plan(packing.id)), timeout, "the plan everywhere")
        figures["register -> plan at every stmgr, s"] = time.monotonic() - started
        figures["  leader cpu during it, s"] = _cpu(leader) - cpu0
        plan_frame = fleet.call(lambda: len(_frame_of(fleet, packing.id)))
        figures["physical plan frame, KB"] = plan_frame / 1024
        figures["  sent to all stmgrs (whole), MB"] = plan_frame * containers / 2 ** 20

        # steady state: heartbeats and metrics at default intervals
        window = 2 * max(float(config["squall.heartbeat.interval.secs"]),
                         float(config["topology.builtin.metrics.bucket.size.secs"]))
        cpu0, started = _cpu(leader), time.monotonic()
        time.sleep(window)  # the window measured: two heartbeat and metrics intervals
        figures["leader cpu share, heartbeats + metrics, %"] = 100 * (_cpu(leader) - cpu0) / (
            time.monotonic() - started)
        figures["leader memory (rss), MB"] = leader.memory_info().rss / 2 ** 20

        figures.update(zookeeper_figures(state, address.root))
        figures.update(ui_figures(address, name, leader))

        # a plan update: one more instance of "count" per container, as `squall update` writes it
        before = fleet.call(fleet.plan_counts)
        planned = manager.plan(state, name, TopologyUpdate(parallelism={"count": 11 * containers}), base_config())
        cpu0, started, sent0 = _cpu(leader), time.monotonic(), fleet.call(lambda: fleet.control_bytes)
        state.put(Kind.TOPOLOGY, name, planned.topology)
        state.put(Kind.PACKING_PLAN, name, planned.proposed)
        wait_until(lambda: fleet.call(lambda: fleet.all_have_plan(planned.proposed.id, before)), timeout,
                   "the updated plan everywhere")
        figures["update -> new plan at every stmgr, s"] = time.monotonic() - started
        figures["  leader cpu during it, s"] = _cpu(leader) - cpu0
        figures["  plan bytes to all stmgrs (deltas), MB"] = (fleet.call(lambda: fleet.control_bytes) - sent0) / 2 ** 20

        # one task restarted (a new pid): the plan's change at every stream manager
        sent0, started = fleet.call(lambda: fleet.control_bytes), time.monotonic()
        task, pid = fleet.call(lambda: fleet.restart_task(1))
        wait_until(lambda: fleet.call(lambda: fleet.all_hold(task, pid)), timeout, "the restarted task's plan")
        figures["a task restarted -> plan at every stmgr, s"] = time.monotonic() - started
        figures["  its plan bytes to all stmgrs (deltas), MB"] = (fleet.call(lambda: fleet.control_bytes)
                                                               - sent0) / 2 ** 20

        # failover: the leader dies, the standby takes over, every stream manager registers again
        before = fleet.call(fleet.plan_counts)
        killed = time.monotonic()
        os.kill(leader_pid, signal.SIGKILL)
        wait_until(lambda: getattr(state.get(Kind.TMASTER, name), "pid", None) == standby.pid, 120,
                   "the standby to lead")
        took_over = time.monotonic()
        figures["failover: kill -> standby leads (session timeout), s"] = took_over - killed
        wait_until(lambda: fleet.call(lambda: fleet.all_have_plan(planned.proposed.id, before)), timeout,
                   "every stmgr registered with the new leader, with its plan")
        figures["failover: standby leads -> plan at every stmgr, s"] = time.monotonic() - took_over
        figures["failover: kill -> plan at every stmgr, s"] = time.monotonic() - killed
    finally:
        fleet.close()
        for p in tmasters:
            p.kill()
            p.wait()
        state.delete_topology(name)
        state.close()


def topology_config(topology: object) -> object:
    from squall.logical import topology_config as resolve

    return resolve(topology)


def write_container_records(state: object, name: str, packing: object) -> None:
    """Each container's record, as its executor writes it (ephemeral: gone with this process's session)."""
    from squall.idl import schema
    from squall.state import Kind, member

    for c in packing.containers:
        processes = [schema.ProcessStatus(name=f"instance-{i.id.task_id}-{i.id.component}", pid=1_000_000 + i.id.task_id,
                                          restarts=0, crashes=0, last_exit=None, failure=None,
                                          log_file=f"/tmp/logs/container-{c.id}/instance-{i.id.task_id}.log")
                     for i in c.instances]
        processes += [schema.ProcessStatus(name=p, pid=1_000_000 - c.id, restarts=0, crashes=0, last_exit=None,
                                           failure=None, log_file=f"/tmp/logs/container-{c.id}/{p}.log")
                      for p in ("metricsmgr", "stmgr")]
        state.create(Kind.CONTAINER, member(name, c.id), schema.ContainerStatus(
            container=c.id, host="127.0.0.1", executor_pid=1_000_000 - c.id, updated=time.time(),
            processes=processes))


def zookeeper_figures(state: object, root: str) -> Dict[str, float]:
    """Nodes and bytes under the state root (one topology there)."""
    nodes, size = 0, 0
    todo = [root]
    client = state.client
    while todo:
        path = todo.pop()
        data, stat = client.get(path)
        nodes += 1
        size += stat.dataLength
        todo += [f"{path}/{child}" for child in client.get_children(path)]
    return {"ZooKeeper nodes": nodes, "ZooKeeper bytes, KB": size / 1024}


def ui_figures(address: object, name: str, leader: object) -> Dict[str, float]:
    """Each page and API answer of the topology from a real ``squall ui`` process (its own process and GIL,
    as in production) reading the bench's state: wall-clock seconds, the UI process's cpu seconds, and the
    ``leader``'s (a psutil.Process: its metrics answer, and the fleet's rows arriving meanwhile)."""
    import urllib.request

    import psutil
    import yaml

    folder = tempfile.mkdtemp(prefix="squall-scale-ui-")
    config_path = os.path.join(folder, "cluster.yaml")
    fd = os.open(config_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)  # it holds the ZooKeeper credential
    with os.fdopen(fd, "w") as f:
        yaml.safe_dump({"squall.state.manager": address.manager, "squall.state.root": address.root,
                        "squall.state.zookeeper.connect": address.connect,
                        "squall.state.zookeeper.auth": address.auth}, f)
    with open(os.path.join(folder, "ui.log"), "wb") as log:
        ui = subprocess.Popen([sys.executable, "-m", "squall.cli", "ui", "--port", "0", "--config-path", config_path],
                              stdout=subprocess.PIPE, stderr=log, text=True)
    figures: Dict[str, float] = {}
    try:
        line = ui.stdout.readline()  # "squall ui: URL (state: ...)" once it listens
        if not line.startswith("squall ui: http://"):
            raise RuntimeError(f"squall ui did not start ({line!r}): see {folder}/ui.log")
        base, process = line.split()[2].rstrip("/"), psutil.Process(ui.pid)
        for what, path in UI_PATHS.items():
            times, cpus, leader_cpus, size = [], [], [], 0
            for _ in range(3):
                cpu0, leader0, started = _cpu(process), _cpu(leader), time.perf_counter()
                with urllib.request.urlopen(base + path.format(name=name), timeout=120) as response:
                    size = len(response.read())
                times.append(time.perf_counter() - started)
                cpus.append(_cpu(process) - cpu0)
                leader_cpus.append(_cpu(leader) - leader0)
            figures[f"UI {what}, s"] = statistics.median(times)
            figures[f"  {what}: UI process cpu, s"] = statistics.median(cpus)
            figures[f"  {what}: leader cpu meanwhile, s"] = statistics.median(leader_cpus)
            figures[f"  {what} size, KB"] = size / 1024
    finally:
        ui.terminate()
        ui.wait(30)
        ui.stdout.close()
    shutil.rmtree(folder)  # the credential's copy (kept, with the UI's log, when it failed)
    return figures


def _cpu(process: object) -> float:
    times = process.cpu_times()
    return times.user + times.system


def _frame_of(fleet: object, packing_id: str) -> bytes:
    from squall.runtime.protocol import control_frame

    return control_frame(physical_plan=fleet.plans[packing_id])


# output -------------------------------------------------------------------------------------------------
def print_curves(title: str, sizes: List[int], results: Dict[int, Dict[str, float]]) -> None:
    print(f"\n{title} (uptime: {os.getloadavg()[0]:.1f} load)")
    heads = " | ".join(f"{n:,} containers" for n in sizes)
    growth = " | ".join(f"x{b // a} growth" for a, b in zip(sizes, sizes[1:]))
    print(f"| figure | {heads} | {growth} |")
    print("|---" * (1 + 2 * len(sizes) - 1) + "|")
    keys = list(dict.fromkeys(k for n in sizes for k in results[n]))
    for key in keys:
        values = [results[n].get(key) for n in sizes]
        cells = " | ".join(_fmt(v) for v in values)
        ratios = " | ".join(f"{b / a:.1f}x" if a and b is not None else "-" for a, b in zip(values, values[1:]))
        print(f"| {key} | {cells} | {ratios} |")


def _fmt(value: object) -> str:
    if value is None:
        return "-"
    return f"{value:,.0f}" if value >= 1000 else f"{value:.3g}"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--containers", default="10,100,1000", help="comma-separated sizes (20 instances each)")
    p.add_argument("--only", default=",".join(SECTIONS), help=f"comma-separated: {', '.join(SECTIONS)}")
    p.add_argument("--heartbeat-timeout", type=float, default=None,
                   help="squall.heartbeat.timeout.secs of the topology (default: the default, 30 s); on a machine "
                        "so loaded that processes get a few %% of a core, starved heartbeats miss it")
    args = p.parse_args()
    chosen = [s for s in args.only.split(",") if s]
    unknown = sorted(set(chosen) - set(SECTIONS))
    if unknown:
        p.error(f"--only: unknown {', '.join(unknown)}; the sections are {', '.join(SECTIONS)}")
    try:
        sizes = [int(s) for s in args.containers.split(",") if s]
    except ValueError:
        p.error(f"--containers: expected comma-separated numbers, got {args.containers!r}")
    if "builder" in chosen:
        print_curves("PlanBuilder", sizes, {n: builder_figures(n) for n in sizes})
    if "ui-cpu" in chosen:
        print_curves("UI answers, cpu", sizes, {n: ui_cpu_figures(n) for n in sizes})
    if "control" in chosen:
        from squall.state.zkserver import ZooKeeperServer

        zk = ZooKeeperServer()
        zk.start()
        try:
            results = {}
            for n in sizes:
                results[n] = {}
                try:
                    control_figures(n, zk.hosts, results[n], args.heartbeat_timeout)
                except AssertionError as e:  # a wait past its deadline: the figures after it are missing
                    print(f"{n} containers: {e}", file=sys.stderr)
                print(f"{n} containers: {results[n]}", file=sys.stderr)
            print_curves("control plane", sizes, results)
        finally:
            zk.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
