"""Submitting a topology: validate -> pack -> write state -> schedule -> wait.

Everything that can be refused is refused before anything is written or
started. If the topology does not come up within ``squall.submit.timeout.secs``,
or a process of it keeps dying while it comes up (``CRASHES_WHILE_STARTING``
exits), what was started is killed, the state removed, and the error names
the process that failed with the end of its log.
"""
from __future__ import annotations

import getpass
import json
import logging
import os
import secrets
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Callable, Mapping, Optional, Sequence

from squall.conf import CLUSTER_LAYER, Config, base_config, registry
from squall.errors import SquallError
from squall.idl import replace, schema
from squall.importing import import_object
from squall.logical import encode_config, topology_config
from squall.packing import pack, plan_to_json
from squall.preflight import preflight
from squall.scheduler.base import LaunchOptions, Scheduler, state_file
from squall.scheduler.shipped_files import MAX_KEY, LocalFile, check_size, ship_at_submit
from squall.state import AlreadyExists, Kind, StateAddress, StateManager, squall_home
from squall.state.status import FAILED, topology_health
from squall.supervision import log_tail

log = logging.getLogger(__name__)

# Exits of one process while the topology comes up that fail the submit at once.
CRASHES_WHILE_STARTING = 2


class SubmitError(SquallError):
    """The topology could not be submitted or did not come up."""


@dataclass
class Progress:
    """What ``submit`` reports while it waits: instances registered so far."""

    registered: int
    total: int
    elapsed: float


def topology_home(name: str) -> str:
    """``$SQUALL_HOME/topologies/<name>``: one folder per run inside."""
    return os.path.join(squall_home(), "topologies", name)


def new_run_dir(name: str) -> tuple[str, str]:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    run_id, n = stamp, 1
    while os.path.exists(os.path.join(topology_home(name), run_id)):
        n += 1
        run_id = f"{stamp}-{n}"
    return run_id, os.path.join(topology_home(name), run_id)


# --cluster -> its scheduler class, imported by name (as Heron's scheduler class is configured), so
# this layer does not import the layers above it (squall.yarn imports squall.scheduler).
SCHEDULERS = {
    "local": "squall.scheduler.local:LocalScheduler",
    "yarn": "squall.yarn.scheduler:YarnScheduler",
}


def make_scheduler(cluster: str, state: Optional[StateManager],
                   options: LaunchOptions = LaunchOptions()) -> Scheduler:
    if cluster not in SCHEDULERS:
        raise SubmitError(f"--cluster {cluster!r}: unknown cluster (available: {', '.join(SCHEDULERS)})")
    try:
        cls = import_object(SCHEDULERS[cluster])
    except ModuleNotFoundError as e:
        raise SubmitError(f"--cluster {cluster} needs the Python package {e.name!r}: "
                          f"pip install 'squall[{cluster}]'") from e
    return cls.create(state, options)


def _with_cluster(topology: schema.Topology, base: Config) -> tuple:
    """The plan with the cluster layer, and its config."""
    topology = with_cluster_layer(topology, base)
    return topology, topology_config(topology, base)


def dry_run(topology: schema.Topology, base: Config, cluster: str, files: Sequence[LocalFile] = ()) -> str:
    """What ``submit`` would launch on ``cluster`` (the scheduler's description); writes nothing."""
    topology, config = _with_cluster(topology, base)
    check_size({f.alias: f.size for f in files}, config[MAX_KEY])
    preflight(topology, base)
    scheduler = make_scheduler(cluster, None, LaunchOptions(dry_run=True))
    plan = pack(topology, base)
    scheduler.check(topology, plan, config)
    _, run_dir = new_run_dir(topology.name)
    return scheduler.describe(topology, plan, config, run_dir)


def submit(
    topology: schema.Topology,
    state: StateManager,
    base: Config,
    cluster: str = "local",
    progress: Optional[Callable[[Progress], None]] = None,
    options: LaunchOptions = LaunchOptions(),
    files: Sequence[LocalFile] = (),
) -> schema.ExecutionState:
    """Launch the logical plan ``topology`` and wait until every instance is up.

    Whatever goes wrong after the first record is written (the scheduler
    fails, the topology does not come up, Ctrl-C) kills what was started and
    removes the records: nothing is left half-launched. With
    ``options.spec_out`` the scheduler only prepares the launch (an operator
    submits it), and this returns without waiting. ``files`` are shipped to every task
    (``shipped_files``).
    """
    name = topology.name
    topology, config = _with_cluster(topology, base)
    check_size({f.alias: f.size for f in files}, config[MAX_KEY])
    preflight(topology, base)  # a broker that is not there, a path that cannot be written: nothing launched
    scheduler = make_scheduler(cluster, state, options)
    address = StateAddress.from_config(base)
    plan = pack(topology, base)  # refuses impossible requests before anything starts
    scheduler.check(topology, plan, config)
    try:
        state.create(Kind.LOCK, name, str(os.getpid()).encode())
    except AlreadyExists:
        raise SubmitError(f"topology {name!r} is being submitted or killed by another command") from None
    try:
        if state.get(Kind.EXECUTION_STATE, name) is not None:
            raise SubmitError(f"topology {name!r} is already running; kill it first (squall kill {name})")
        execution = _write_run(topology, plan, state, cluster, address, scheduler.interpreter())
        try:
            if files:
                state.put(Kind.FILES, name, ship_at_submit(files, execution))
            scheduler.on_schedule(execution, plan)
            if scheduler.launched:
                _wait_until_up(state, name, plan, config["squall.submit.timeout.secs"], progress)
        except BaseException:
            scheduler.on_kill(execution)
            state.delete_topology(name)
            raise
        return execution
    finally:
        state.delete(Kind.LOCK, name)


def with_cluster_layer(topology: schema.Topology, base: Config) -> schema.Topology:
    """The plan with ``base``'s cluster-file values as its cluster layer (``cluster_config``).

    Runtime processes resolve their config from the stored plan (defaults,
    site file, plan); the cluster file given at submit exists only here, so
    its values travel in the plan, below the topology's own keys and under
    their own name ("cluster config" in an error).
    """
    site = base_config()
    keys = registry()
    # credentials stay out of the plan: processes get them from the run's state address file
    layer = {k: v for k, v in base.items()
             if (k not in site or site[k] != v) and not (k in keys and keys[k].secret)}
    if not layer:
        return topology
    return replace(topology, cluster_config=encode_config(layer, CLUSTER_LAYER))


def _write_run(topology: schema.Topology, plan: schema.PackingPlan, state: StateManager, cluster: str, address: StateAddress,
               python: str) -> schema.ExecutionState:
    run_id, run_dir = new_run_dir(topology.name)
    for sub in ("logs", "metrics"):
        os.makedirs(os.path.join(run_dir, sub), exist_ok=True)
    with open(os.path.join(run_dir, "packing_plan.json"), "w") as f:
        json.dump(plan_to_json(topology.name, plan), f, indent=2)
    execution = schema.ExecutionState(
        topology_name=topology.name,
        run_id=run_id,
        run_dir=run_dir,
        submit_time=time.time(),
        submitter=getpass.getuser(),
        status=schema.TopologyStatus.RUNNING,
        secret=secrets.token_hex(16),
        cluster=cluster,
        python=python,
    )
    address.write(state_file(execution))
    state.put(Kind.TOPOLOGY, topology.name, topology)
    state.put(Kind.PACKING_PLAN, topology.name, plan)
    state.put(Kind.EXECUTION_STATE, topology.name, execution)
    return execution


def registered_pids(state: StateManager, name: str, plan: schema.PackingPlan) -> dict:
    """task id -> pid of the instances of ``plan`` that the current physical plan lists."""
    physical = state.get(Kind.PHYSICAL_PLAN, name)
    if physical is None or physical.packing_plan_id != plan.id:
        return {}
    return {i.id.task_id: i.pid for i in physical.instances}


def initialized(state: StateManager, pids: Mapping[int, int], name: str) -> bool:
    """Every instance process its executor runs has said that its tasks are initialized
    (runtime/readiness.py), and is the process the physical plan lists (``pids``: task -> pid)."""
    listed = set(pids.values())
    return all(p.initialized and p.pid in listed for record in state.container_records(name)
               for p in record.processes if p.initialized is not None)


def _wait_until_up(
    state: StateManager,
    name: str,
    plan: schema.PackingPlan,
    timeout: float,
    progress: Optional[Callable[[Progress], None]],
) -> None:
    """Wait until the topology is up and every instance has run ``initialize``.

    Instances register before they run user code (``initialize`` needs the
    physical plan), so a complete plan is not enough: up means RUNNING (every
    process of the plan alive and registered) and every instance process
    initialized, as its executor records it. A process that exits
    ``CRASHES_WHILE_STARTING`` times, or anything past its restart budget,
    fails the submit at once with the end of its log.
    """
    total = sum(len(c.instances) for c in plan.containers)
    start = time.monotonic()
    while True:
        elapsed = time.monotonic() - start
        health = topology_health(state, name)
        if health.status == FAILED:
            raise SubmitError(f"topology {name!r} failed while starting: {health.reasons[0]}")
        for container, process in health.crashed:
            if process.crashes >= CRASHES_WHILE_STARTING:
                raise SubmitError(
                    f"topology {name!r} did not come up: container {container}'s {process.name} exited "
                    f"{process.crashes} times (last exit status {process.last_exit}); the end of its log "
                    f"({process.log_file}):\n{log_tail(process.log_file)}")
        pids = registered_pids(state, name, plan)
        registered = health.up and len(pids) >= total
        if registered and initialized(state, pids, name):
            if progress is not None:
                progress(Progress(total, total, elapsed))
            return
        if progress is not None:
            progress(Progress(len(pids), total, elapsed))
        if elapsed > timeout:
            execution = state.get(Kind.EXECUTION_STATE, name)
            where = ("every instance registered, not every one through initialize()" if registered else
                     f"{len(pids)} of {total} instances registered and running")
            raise SubmitError(f"topology {name!r} did not come up in {timeout:g}s ({where}); "
                              f"{diagnose(execution.run_dir)}")
        time.sleep(0.2)


def diagnose(run_dir: str, tail_lines: int = 12) -> str:
    """Name the process whose log shows a failure, with the tail of that log."""
    logs_dir = os.path.join(run_dir, "logs")
    candidates = []
    for folder, _, files in sorted(os.walk(logs_dir)):
        for file in sorted(files):
            path = os.path.join(folder, file)
            try:
                with open(path, errors="replace") as f:
                    text = f.read()
            except OSError:
                continue
            if "Traceback" in text or "ERROR" in text:
                candidates.append((path, text))
    if not candidates:
        return f"no process logged an error; see the logs in {logs_dir}"
    path, text = candidates[0]
    tail = "\n".join(text.rstrip().splitlines()[-tail_lines:])
    process = os.path.relpath(path, logs_dir)
    return f"{process} failed; the end of its log ({path}):\n{tail}"
