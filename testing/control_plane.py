"""Many containers' control side in one process: a fleet of simulated stream managers and metrics
managers speaking the real protocol (``squall.runtime.protocol``) to a real topology master.

Where a thousand containers cannot be started, their control traffic can: each simulated container
opens the two connections its real daemons open to the leading topology master (the stream manager's,
which registers its instances and heartbeats, and the metrics manager's, which forwards a row per
process every bucket), follows the ``tmasters`` record to a new leader as a real stream manager does,
and re-registers its instances when the packing plan in the state manager changes them (what its
executor and instances do in a real container). No data plane: no instance runs, no tuple moves.

``bench/scale.py`` measures the control plane with it at 10, 100 and 1,000 containers;
``tests/runtime/test_control_plane_fleet.py`` checks, at 10, that every container got the physical
plan, the update and registered again after a failover. ``write_run`` writes a topology's state as
the launcher does, into any state manager (ZooKeeper included), and ``tmaster_command`` is the
runtime contract's command of a topology master.
"""
from __future__ import annotations

import asyncio
import hashlib
import json
import os
import secrets
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Optional, TypeVar

from squall.idl import schema
from squall.processargs import ProcessArgs
from squall.runtime.plan_delta import StalePlan, apply_delta
from squall.runtime.protocol import DEFAULT_MAX_FRAME, HANDSHAKE_MAX_PENDING, Connection, control_frame, decode_control
from squall.runtime.stmgr_state import RETRY_SECS
from squall.state import Kind, StateAddress, StateManager

T = TypeVar("T")
REDIAL_SECS = RETRY_SECS  # a lost connection is dialled again after this, as a stream manager does
FAKE_PID = 1_000_000  # simulated processes' pids: FAKE_PID + task id (FAKE_PID - container for daemons)


def scale_topology(name: str, containers: int, config: Optional[dict] = None) -> schema.Topology:
    """spout (10 per container) -> count (10 per container, fields grouping), packed round-robin over
    ``containers``: 20 instances a container, small enough for any container; ``config`` adds to the
    topology's config. The Thrift Topology."""
    from squall import Grouping, TopologyBuilder
    from squall.streamlet_ops import StreamletSpout
    from squall.testing.words import Split

    builder = TopologyBuilder(name)
    spout = builder.add_spout("spout", StreamletSpout, par=10 * containers)
    builder.add_bolt("count", Split, par=10 * containers, inputs={spout: Grouping.fields("value")})
    builder.set_config({"squall.packing.algorithm": "roundrobin", "topology.workers": containers,
                        "squall.chaining": "off", "squall.component.cpu": 0.1, "squall.component.ram.mb": 64,
                        "squall.component.disk.mb": 16, **(config or {})})
    return builder.build().plan


def write_run(state: StateManager, address: StateAddress, run_dir: str, topology: schema.Topology,
              packing: schema.PackingPlan) -> schema.ExecutionState:
    """The topology, packing plan and execution state records, as the launcher writes them, and the run
    folder with its state address file (``<run_dir>/state.json``)."""
    for sub in ("logs", "metrics"):
        os.makedirs(os.path.join(run_dir, sub), exist_ok=True)
    address.write(os.path.join(run_dir, "state.json"))
    execution = schema.ExecutionState(
        topology_name=topology.name, run_id=os.path.basename(run_dir), run_dir=run_dir, submit_time=time.time(),
        submitter="simulation", status=schema.TopologyStatus.RUNNING, secret=secrets.token_hex(16),
        cluster="local", python=sys.executable)
    state.put(Kind.TOPOLOGY, topology.name, topology)
    state.put(Kind.PACKING_PLAN, topology.name, packing)
    state.put(Kind.EXECUTION_STATE, topology.name, execution)
    return execution


def tmaster_command(name: str, run_dir: str) -> list[str]:
    """A topology master of container 0, with the runtime contract's command (``squall.processargs``)."""
    return ProcessArgs(name, 0, os.path.join(run_dir, "state.json"), role="tmaster").command(sys.executable)


@dataclass
class SimulatedContainer:
    """One container's control side: what it registers and what it received."""

    container: int
    instances: list  # InstanceLocation of its tasks, as its stream manager registers them
    stmgr: Optional[Connection] = None
    metricsmgr: Optional[Connection] = None
    registrations: int = 0  # registrations sent (on each new connection and each change of its tasks)
    connections: int = 0  # stream-manager connections that completed the handshake
    with_leader: dict = field(default_factory=dict)  # leader's pid -> [connections, registrations] with it
    leader: int = 0  # the pid of the leader its stream-manager connection is with
    plans: list = field(default_factory=list)  # packing-plan id of every physical plan received, in order
    plan_digests: set = field(default_factory=set)  # digests of the physical-plan frames received (whole or delta)
    plan: Optional[schema.PhysicalPlan] = None  # the plan it holds (a delta applied to the one before)
    plan_key: bytes = b""  # what its plan was made of: the digests of the frames, chained
    deltas: int = 0  # plans received as a delta
    refusals: list = field(default_factory=list)  # errors of refused registrations
    next_heartbeat: float = 0.0
    next_metrics: float = 0.0

    def registration(self) -> schema.RegisterStMgr:
        loc = schema.StMgrLocation(container=self.container, host="127.0.0.1", data_port=0,
                                   pid=FAKE_PID - self.container)
        return schema.RegisterStMgr(stmgr=loc, instances=self.instances,
                                    plan_version=self.plan.version if self.plan is not None else None)


def instance_locations(container: schema.ContainerPlan) -> list:
    """The instances a container's stream manager registers once all of them are connected."""
    return [schema.InstanceLocation(id=schema.InstanceId(component=i.id.component, task_id=i.id.task_id,
                                                         component_index=-1),
                                    container=container.id, pid=FAKE_PID + i.id.task_id)
            for i in sorted(container.instances, key=lambda i: i.id.task_id)]


class _Link:
    """The handler of one simulated daemon's connection to the topology master at ``location``."""

    def __init__(self, fleet: "ControlPlaneFleet", sim: SimulatedContainer, role: int,
                 location: schema.TMasterLocation):
        self.fleet, self.sim, self.role, self.location = fleet, sim, role, location
        self.handshaking = True

    def accept(self, conn: Connection, hello: schema.Hello) -> bool:  # client side: never asked
        return False

    def ready(self, conn: Connection) -> None:
        self.handshake_done()
        self.fleet.on_ready(self, conn)

    def frames(self, conn: Connection, frames: list) -> None:
        if self.role == schema.Role.STMGR:
            for f in frames:
                self.fleet.on_control(self.sim, f)

    def lost(self, conn: Connection) -> None:
        was_handshaking = self.handshaking
        self.handshake_done()
        self.fleet.on_lost(self, conn, was_handshaking)

    def handshake_done(self) -> None:
        if self.handshaking:
            self.handshaking = False
            self.fleet.handshakes.release()


class ControlPlaneFleet:
    """Simulated containers of one topology, on an asyncio loop of their own (a thread).

    ``start()`` reads the packing plan and follows the ``tmasters`` and packing-plan records through the
    state manager's watches. Every container keeps a stream-manager connection (registration, a
    heartbeat every ``heartbeat_secs``) and a metrics-manager connection (a row per process every
    ``bucket_secs``) to the leader; handshakes are dialled at most ``HANDSHAKE_MAX_PENDING // 2`` at once
    (the topology master refuses more pending handshakes than ``HANDSHAKE_MAX_PENDING``). ``call(fn)``
    runs ``fn`` on the fleet's loop and returns its result: read the containers' figures only through it.
    """

    def __init__(self, state: StateManager, name: str, secret: str, heartbeat_secs: float, bucket_secs: float,
                 max_frame: int = DEFAULT_MAX_FRAME):
        self.state, self.name, self.secret = state, name, secret
        self.heartbeat_secs, self.bucket_secs, self.max_frame = heartbeat_secs, bucket_secs, max_frame
        self.containers: dict[int, SimulatedContainer] = {}
        self.tmaster: Optional[schema.TMasterLocation] = None
        self.decoded: dict[bytes, schema.Control] = {}  # digest -> message: each distinct frame decoded once
        self.plans: dict[str, schema.PhysicalPlan] = {}  # packing-plan id -> the last physical plan of it held
        self.rebuilt: dict[bytes, schema.PhysicalPlan] = {}  # chained plan key -> the plan a delta made: once
        self.control_bytes = 0  # bytes of control frames received from the topology masters
        self.loop = asyncio.new_event_loop()
        self.handshakes = asyncio.Semaphore(HANDSHAKE_MAX_PENDING // 2)
        self._thread = threading.Thread(target=self.loop.run_forever, name="control-plane-fleet", daemon=True)
        self._cancels: list = []
        self._dialing: set = set()  # (container, role) of the connections being made

    # lifecycle ---------------------------------------------------------------------------------
    def start(self) -> "ControlPlaneFleet":
        self._thread.start()
        self.call(self._start_ticker)
        call = self.loop.call_soon_threadsafe
        self._cancels.append(self.state.watch(Kind.PACKING_PLAN, self.name, lambda p: call(self.on_packing, p)))
        self._cancels.append(self.state.watch(Kind.TMASTER, self.name, lambda t: call(self.on_tmaster, t)))
        packing, location = self.state.get(Kind.PACKING_PLAN, self.name), self.state.get(Kind.TMASTER, self.name)
        self.call(lambda: (self.on_packing(packing), self.on_tmaster(location)))  # watches report changes only
        return self

    def close(self) -> None:
        for cancel in self._cancels:
            cancel()
        if self._thread.is_alive():
            asyncio.run_coroutine_threadsafe(self._close_all(), self.loop).result(30)
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(10)
            self.loop.close()

    def __enter__(self) -> "ControlPlaneFleet":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def call(self, fn: Callable[[], T], timeout: float = 60.0) -> T:
        """``fn()`` on the fleet's loop; its result."""
        async def run() -> T:
            return fn()
        return asyncio.run_coroutine_threadsafe(run(), self.loop).result(timeout)

    def _start_ticker(self) -> None:
        self.loop.create_task(self._tick())

    async def _close_all(self) -> None:
        """Close every connection; end every task (a redial, the ticker)."""
        for sim in self.containers.values():
            for conn in (sim.stmgr, sim.metricsmgr):
                if conn is not None:
                    conn.close()
        self.tmaster = None  # nothing dials from now on
        others = [t for t in asyncio.all_tasks(self.loop) if t is not asyncio.current_task()]
        for task in others:
            task.cancel()
        await asyncio.gather(*others, return_exceptions=True)

    # the state manager's records -----------------------------------------------------------------
    def on_packing(self, packing: Optional[schema.PackingPlan]) -> None:
        """A container whose tasks changed registers them again; a new container dials; a gone one leaves."""
        if packing is None:
            return
        wanted = {c.id: c for c in packing.containers}
        for cid in [c for c in self.containers if c not in wanted]:
            sim = self.containers.pop(cid)
            for conn in (sim.stmgr, sim.metricsmgr):
                if conn is not None:
                    conn.close()
        for cid, cplan in sorted(wanted.items()):
            instances = instance_locations(cplan)
            sim = self.containers.get(cid)
            if sim is None:
                sim = self.containers[cid] = SimulatedContainer(cid, instances)
                self._stagger(sim)
                self._dial_both(sim)
            elif sim.instances != instances:
                sim.instances = instances
                self.register(sim)

    def on_tmaster(self, location: Optional[schema.TMasterLocation]) -> None:
        """A new leader: every container leaves the old one and dials it (as ``stmgr_state`` does)."""
        if location is None or location == self.tmaster:
            return
        self.tmaster = location
        for sim in self.containers.values():
            for conn in (sim.stmgr, sim.metricsmgr):
                if conn is not None:
                    conn.close()
            sim.stmgr = sim.metricsmgr = None
            self._dial_both(sim)  # one still dialling the old leader dials this one once it is through

    # connections ---------------------------------------------------------------------------------
    def _stagger(self, sim: SimulatedContainer) -> None:
        """Spread the containers' heartbeats and buckets over their intervals, as independent processes are."""
        phase = (sim.container * 0.618034) % 1.0
        now = time.monotonic()
        sim.next_heartbeat = now + phase * self.heartbeat_secs
        sim.next_metrics = now + phase * self.bucket_secs

    def _dial_both(self, sim: SimulatedContainer) -> None:
        if self.tmaster is None:
            return
        for role in (schema.Role.STMGR, schema.Role.METRICSMGR):
            self.loop.create_task(self._dial(sim, role, self.tmaster, 0.0))

    async def _dial(self, sim: SimulatedContainer, role: int, location: schema.TMasterLocation,
                    delay: float) -> None:
        await asyncio.sleep(delay)
        key = (sim.container, role)
        if location != self.tmaster or not self._current(sim) or self._slot(sim, role) or key in self._dialing:
            return  # another leader by now, the container is gone, connected, or being connected
        self._dialing.add(key)
        await self.handshakes.acquire()
        link = _Link(self, sim, role, location)
        conn = Connection(link, self.name, self.secret, False, self.max_frame,
                          hello_args={"role": role, "container": sim.container},
                          name=f"container {sim.container} {schema.Role._VALUES_TO_NAMES[role]}")
        try:
            await self.loop.create_connection(lambda: conn, location.host, location.control_port)
        except OSError:  # the leader is gone (its record not yet): dial again, as a stream manager does
            link.lost(conn)

    def _current(self, sim: SimulatedContainer) -> bool:
        return self.containers.get(sim.container) is sim

    @staticmethod
    def _slot(sim: SimulatedContainer, role: int) -> Optional[Connection]:
        return sim.stmgr if role == schema.Role.STMGR else sim.metricsmgr

    def _set_slot(self, sim: SimulatedContainer, role: int, conn: Optional[Connection]) -> None:
        if role == schema.Role.STMGR:
            sim.stmgr = conn
        else:
            sim.metricsmgr = conn

    def on_ready(self, link: _Link, conn: Connection) -> None:
        sim, role = link.sim, link.role
        self._dialing.discard((sim.container, role))
        if link.location != self.tmaster or not self._current(sim):  # a leader left while this dialled
            conn.close()
            if self.tmaster is not None and self._current(sim):
                self.loop.create_task(self._dial(sim, role, self.tmaster, 0.0))
            return
        self._set_slot(sim, role, conn)
        if role == schema.Role.STMGR:
            sim.connections += 1
            sim.leader = link.location.pid
            sim.with_leader.setdefault(sim.leader, [0, 0])[0] += 1
            self.register(sim)

    def on_lost(self, link: _Link, conn: Connection, handshaking: bool) -> None:
        """A connection lost (refused, or the leader stepped down or died) is dialled again after
        ``REDIAL_SECS`` (a stream manager does so on the record's location until the record changes)."""
        sim, role = link.sim, link.role
        if handshaking:
            self._dialing.discard((sim.container, role))
        elif self._slot(sim, role) is conn:
            self._set_slot(sim, role, None)
        else:
            return  # one this container had already left
        if self.tmaster is not None and self._current(sim):
            self.loop.create_task(self._dial(sim, role, self.tmaster, REDIAL_SECS))

    def register(self, sim: SimulatedContainer) -> None:
        if sim.stmgr is not None and sim.stmgr.authenticated:
            sim.registrations += 1
            sim.with_leader[sim.leader][1] += 1
            sim.stmgr.write(control_frame(register_stmgr=sim.registration()))

    def on_control(self, sim: SimulatedContainer, frame: bytes) -> None:
        self.control_bytes += len(frame)
        digest = hashlib.blake2b(frame, digest_size=16).digest()
        msg = self.decoded.get(digest)
        if msg is None:
            msg = self.decoded[digest] = decode_control(frame)
        if msg.physical_plan is not None or msg.plan_delta is not None:
            self.hold(sim, msg, digest)
        elif msg.register_response is not None and not msg.register_response.ok:
            sim.refusals.append(msg.register_response.error)

    def hold(self, sim: SimulatedContainer, msg: schema.Control, digest: bytes) -> None:
        """A physical plan, whole or a delta of the one ``sim`` holds (rebuilt once for every container
        holding the same); a delta it cannot apply: registered again, holding none, as a stream manager."""
        if msg.physical_plan is not None:
            plan, key = msg.physical_plan, digest
        else:
            key = hashlib.blake2b(sim.plan_key + digest, digest_size=16).digest()
            plan = self.rebuilt.get(key)
            if plan is None:
                try:
                    plan = apply_delta(sim.plan, msg.plan_delta) if sim.plan is not None else None
                except StalePlan:
                    plan = None
                if plan is None:
                    sim.plan, sim.plan_key = None, b""
                    self.register(sim)
                    return
                self.rebuilt[key] = plan
            sim.deltas += 1
        sim.plan, sim.plan_key = plan, key
        sim.plans.append(plan.packing_plan_id)
        sim.plan_digests.add(digest)
        self.plans[plan.packing_plan_id] = plan

    # heartbeats and metrics ------------------------------------------------------------------------
    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(0.05)
            now, wall = time.monotonic(), time.time()
            for sim in self.containers.values():
                if now >= sim.next_heartbeat:
                    sim.next_heartbeat += self.heartbeat_secs * max(1, int((now - sim.next_heartbeat)
                                                                           / self.heartbeat_secs) + 1)
                    if sim.stmgr is not None and sim.stmgr.authenticated:
                        sim.stmgr.write(control_frame(heartbeat=schema.Heartbeat(wall)))
                if now >= sim.next_metrics:
                    sim.next_metrics += self.bucket_secs * max(1, int((now - sim.next_metrics)
                                                                      / self.bucket_secs) + 1)
                    if sim.metricsmgr is not None and sim.metricsmgr.authenticated:
                        sim.metricsmgr.write(control_frame(metrics=self.metrics_rows(sim, wall)))

    def metrics_rows(self, sim: SimulatedContainer, wall: float) -> list:
        """A bucket's rows of a container: one per instance, the stream manager's and its own."""
        def row(process: str, component: str, task: Optional[int], pid: int, user: dict) -> schema.MetricsRow:
            return schema.MetricsRow(
                ts=wall, interval_secs=self.bucket_secs, process=process, component=component, task_id=task,
                emit_count=1000, execute_count=1000, ack_count=0, fail_count=0, execute_latency_ms=0.1,
                queue_depth=0, backpressure_ms=0.0, user=json.dumps(user), pid=pid, container=sim.container,
                cpu_percent=1.0, rss_mb=30.0)

        rows = [row("instance", i.id.component, i.id.task_id, i.pid, {}) for i in sim.instances]
        rows.append(row("stmgr", "__stmgr__", None, FAKE_PID - sim.container, {"frames_forwarded": 0}))
        rows.append(row("metricsmgr", "__metricsmgr__", None, FAKE_PID - sim.container, {}))
        return rows

    # figures ---------------------------------------------------------------------------------------
    def all_have_plan(self, packing_id: str, since: Optional[dict] = None) -> bool:
        """Every container received a physical plan of ``packing_id`` (after the ``since[cid]``-th plan)."""
        return bool(self.containers) and all(
            packing_id in sim.plans[(since or {}).get(cid, 0):] for cid, sim in self.containers.items())

    def restart_task(self, container: int) -> tuple[int, int]:
        """Container ``container``'s first task comes back with a new pid and its stream manager registers
        again (a task restarted); ``(task id, new pid)``."""
        sim = self.containers[container]
        old = sim.instances[0]
        new = schema.InstanceLocation(id=old.id, container=old.container, pid=old.pid + FAKE_PID)
        sim.instances = [new] + sim.instances[1:]
        self.register(sim)
        return new.id.task_id, new.pid

    def all_hold(self, task: int, pid: int) -> bool:
        """Every container holds a plan placing ``task`` with ``pid``."""
        return bool(self.containers) and all(
            sim.plan is not None and any(i.id.task_id == task and i.pid == pid for i in sim.plan.instances)
            for sim in self.containers.values())

    def plan_counts(self) -> dict:
        return {cid: len(sim.plans) for cid, sim in self.containers.items()}
