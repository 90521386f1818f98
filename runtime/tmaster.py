"""The topology master: registrations in, the physical plan out; metrics queries.

``PlanBuilder`` is the pure state machine: registrations, the packing plan
and the status in; a ``PhysicalPlan`` out once every container of the packing
plan has registered with exactly its instances. ``MetricsStore``
(``runtime/metrics_store.py``) aggregates the rows the metrics managers
forward. ``TMaster`` is the asyncio shell; its background tasks (heartbeat
checks, the state writer, the lease watch, checkpoint ticks, its metrics) are
critical (``runtime/lifecycle.py``): one that dies stops the process with exit
status 1, and its executor restarts it.
"""
from __future__ import annotations

import asyncio
import json
import logging
import os
import random
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

from squall.idl import schema
from squall.metrics_schema import TMASTER_COMPONENT
from squall.runtime.checkpoints import Broadcast, CheckpointCoordinator, Collect, Record, checkpoint_figures
from squall.runtime.lifecycle import Lifecycle, serve_role
from squall.runtime.metrics_sender import MetricsSender
from squall.runtime.metrics_store import MetricsStore
from squall.runtime.plan_delta import plan_delta, same_plan, versioned
from squall.runtime.protocol import (Connection, HandshakeGate, ProtocolError, control_frame, decode_control,
                                     listen_socket)
from squall.state import Election, Kind, Session, StateError
from squall.state.storage import checkpoint_dir, checkpoint_ids

if TYPE_CHECKING:
    from squall.runtime.bootstrap import RuntimeEnv

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class StMgrPeer:
    """A stream manager's connection (it registers and heartbeats on it)."""

    container: int


@dataclass(frozen=True, slots=True)
class MetricsMgrPeer:
    """A metrics manager's connection (it forwards metrics rows)."""

    container: int


@dataclass(frozen=True, slots=True)
class ClientPeer:
    """A command-line client's connection (metrics queries)."""


class PlanBuilder:
    """Registrations + packing plan + status -> physical plan (or None while incomplete).

    Which containers are still incomplete is kept as registrations arrive (each costs the size of its
    container), so a topology master that asks for the plan after every registration does not go
    over every task each time: registering N containers costs O(tasks), not O(N x tasks).
    """

    def __init__(self, topology_name: str, tmaster: schema.TMasterLocation, packing: schema.PackingPlan,
                 status: int, max_spout_pending: Optional[int] = None):
        self.topology_name = topology_name
        self.tmaster = tmaster
        self.status = status
        self.max_spout_pending = max_spout_pending  # set while running; None: every spout's config
        self.registrations: dict = {}  # container -> RegisterStMgr
        self.set_packing(packing)

    def set_packing(self, packing: schema.PackingPlan) -> None:
        """A new packing plan: registrations of containers it no longer has are dropped."""
        self.packing = packing
        self._wanted = {c.id: frozenset(i.id.task_id for i in c.instances) for c in packing.containers}
        for cid in [c for c in self.registrations if c not in self._wanted]:
            del self.registrations[cid]
        self._incomplete = {cid for cid in self._wanted if not self._complete(cid)}

    def known_containers(self) -> set:
        return set(self._wanted)

    def _complete(self, cid: int) -> bool:
        """Extra tasks are ones the executor stops once this plan is out (scale down, moves)."""
        reg = self.registrations.get(cid)
        return reg is not None and self._wanted[cid] <= {i.id.task_id for i in reg.instances}

    def register(self, reg: schema.RegisterStMgr) -> Optional[str]:
        """Record a registration; an error text when it is refused."""
        cid = reg.stmgr.container
        if cid not in self._wanted:
            shown = sorted(self._wanted)
            listed = ", ".join(map(str, shown[:10])) + (f", ... ({len(shown)} in all)" if len(shown) > 10 else "")
            return f"container {cid} is not in packing plan {self.packing.id} (containers: {listed})"
        self.registrations[cid] = reg
        (self._incomplete.discard if self._complete(cid) else self._incomplete.add)(cid)
        return None

    def unregister(self, container: int) -> None:
        if self.registrations.pop(container, None) is not None and container in self._wanted:
            self._incomplete.add(container)

    def missing(self) -> dict:
        """container -> what is still missing ("stmgr" or sorted missing task ids)."""
        return {cid: self.missing_of(cid) for cid in sorted(self._incomplete)}

    def waiting(self, shown: int = 5) -> str:
        """What the plan waits for, in a line of bounded length (a log line per registration)."""
        missing = {cid: self.missing_of(cid) for cid in sorted(self._incomplete)[:shown]}
        more = len(self._incomplete) - len(missing)
        return f"{len(self._incomplete)} containers: {missing}" + (f" and {more} more" if more > 0 else "")

    def missing_of(self, cid: int) -> object:
        """"stmgr", or the sorted task ids container ``cid`` has not registered."""
        reg = self.registrations.get(cid)
        return "stmgr" if reg is None else sorted(self._wanted[cid] - {i.id.task_id for i in reg.instances})

    def build(self) -> Optional[schema.PhysicalPlan]:
        if self._incomplete:
            return None
        stmgrs, instances = [], []
        for c in sorted(self.packing.containers, key=lambda c: c.id):
            reg = self.registrations[c.id]
            pids = {i.id.task_id: i.pid for i in reg.instances}
            stmgrs.append(reg.stmgr)
            for i in sorted(c.instances, key=lambda i: i.id.task_id):
                instances.append(schema.InstanceLocation(id=i.id, container=c.id, pid=pids[i.id.task_id]))
        return schema.PhysicalPlan(topology_name=self.topology_name, packing_plan_id=self.packing.id,
                                   status=self.status, tmaster=self.tmaster, stmgrs=stmgrs,
                                   instances=instances, max_spout_pending=self.max_spout_pending)


def first_version() -> int:
    """The version of a term's first plan: random, so that a plan numbered by another leader is never taken
    for this one's (a stream manager registers with the version it holds)."""
    return random.getrandbits(62)


class TMaster:
    """The asyncio shell around PlanBuilder and MetricsStore, and the topology's leadership.

    Every topology-master process is a candidate in the topology's election
    (``squall.tmaster.candidates`` of them run in container 0). The leader
    writes its location (``tmasters/<topology>``), accepts registrations and
    publishes the physical plan; the others wait. A leader checks
    ``Election.holds()`` before every leader-only action (publishing,
    writing): while it is cut off from the state manager it serves its
    connections but publishes nothing, and publishes what it held back once
    its leadership is confirmed. Every ``LEASE_CHECK_SECS`` and on each frame
    it checks ``Election.ended()``: the moment its lease has run out or its
    session is lost, it stops serving (closes every connection, writes
    nothing) and competes again. Its state I/O runs in worker threads: the
    loop never waits on ZooKeeper.
    """

    LEASE_CHECK_SECS = 0.2

    def __init__(self, env: "RuntimeEnv"):
        self.env = env
        self.loop: Optional[asyncio.AbstractEventLoop] = None
        self.builder: Optional[PlanBuilder] = None
        self.metrics = MetricsStore()
        self.stmgrs: dict = {}  # container -> Connection
        self.conns: set = set()  # every open connection, closed when leadership ends
        self.last_seen: dict = {}  # Connection -> monotonic time
        self.published: Optional[schema.PhysicalPlan] = None
        self.published_frame = b""  # the CONTROL frame of ``published``
        self.plan_sent: dict = {}  # Connection -> the version of the last plan written to it
        self.lifecycle = Lifecycle("topology master")
        self.resigned = asyncio.Event()  # this term of leadership is over
        self.election: Optional[Election] = None
        self.hb_timeout = float(env.config["squall.heartbeat.timeout.secs"])
        self._writes: Optional[asyncio.Queue] = None
        self.unpublished = False  # a plan change came while leadership was unconfirmed
        self.gate = HandshakeGate()
        self.checkpoints: Optional[CheckpointCoordinator] = None  # a topology that checkpoints

    def leading(self) -> bool:
        """In a term: connections are served (leader-only work also needs ``election.holds()``)."""
        return self.builder is not None and not self.resigned.is_set()

    # connection handler ------------------------------------------------------------
    def accept(self, conn: Connection, hello: schema.Hello) -> bool:
        if not self.leading():
            log.info("refusing a connection: not the leading topology master")
            return False
        role = hello.role
        if role == schema.Role.STMGR:
            conn.peer = StMgrPeer(hello.container)
        elif role == schema.Role.METRICSMGR:
            conn.peer = MetricsMgrPeer(hello.container)
        elif role == schema.Role.CLIENT:
            conn.peer = ClientPeer()
        else:
            log.warning("refusing a %s connection on the control port", schema.Role._VALUES_TO_NAMES.get(role))
            return False
        return True

    def ready(self, conn: Connection) -> None:
        self.conns.add(conn)
        self.last_seen[conn] = time.monotonic()

    def lost(self, conn: Connection) -> None:
        self.conns.discard(conn)
        self.last_seen.pop(conn, None)
        self.plan_sent.pop(conn, None)
        who = conn.peer
        # a stream manager's older connection, replaced by a newer one, is no longer in self.stmgrs
        if self.leading() and isinstance(who, StMgrPeer) and self.stmgrs.get(who.container) is conn:
            del self.stmgrs[who.container]
            self.builder.unregister(who.container)
            log.warning("stream manager of container %d disconnected", who.container)

    def frames(self, conn: Connection, frames: list) -> None:
        if not self.leading() or self.election.ended():
            self.step_down("leadership ended")
            return
        self.last_seen[conn] = time.monotonic()
        who = conn.peer
        for f in frames:
            msg = decode_control(f)
            if isinstance(who, StMgrPeer) and msg.register_stmgr is not None:
                self.on_register(conn, msg.register_stmgr)
            elif isinstance(who, StMgrPeer) and msg.heartbeat is not None:
                pass
            elif isinstance(who, StMgrPeer) and msg.checkpoint is not None:
                if self.checkpoints is not None:
                    self.carry_out(self.checkpoints.on_report(msg.checkpoint, time.monotonic()))
            elif msg.metrics is not None and isinstance(who, (MetricsMgrPeer, StMgrPeer)):
                for row in msg.metrics:
                    self.metrics.add(row)
            elif isinstance(who, ClientPeer) and msg.metrics_query is not None:
                q = msg.metrics_query
                response = self.metrics.response(q.component, q.window_secs, bool(q.series), task_ids=q.task_ids)
                if self.checkpoints is not None:
                    response.checkpoints = self.checkpoints.stats()
                conn.write(control_frame(metrics_response=response))
            else:
                raise ProtocolError(f"unexpected control message from {who}")

    def on_register(self, conn: Connection, reg: schema.RegisterStMgr) -> None:
        cid = reg.stmgr.container
        error = self.builder.register(reg)
        if error is not None:
            log.warning("refusing stream manager: %s", error)
            conn.write(control_frame(register_response=schema.RegisterResponse(ok=False, error=error)))
            conn.close()
            return
        old = self.stmgrs.get(cid)
        if old is not None and old is not conn:
            old.close()
        self.stmgrs[cid] = conn
        self.plan_sent[conn] = reg.plan_version  # what it holds: a new connection none, a stale one none
        log.info("container %d registered with tasks %s", cid, [i.id.task_id for i in reg.instances])
        under_way = self.checkpoints.restoring() if self.checkpoints is not None else None
        self.publish(registered=conn)
        if under_way is not None and self.checkpoints.restoring() == under_way:
            conn.write(control_frame(checkpoint=under_way))  # a restore it may have missed, after the plan

    # plan ------------------------------------------------------------------------------
    def publish(self, force: bool = False, registered: Optional[Connection] = None) -> None:
        """Send the plan to every stream manager when it changed; an unchanged plan to ``registered`` alone
        unless it holds it (a stream manager dropped while the plan was on its way, say for heartbeats its
        leader was too busy to read, registers again with the same instances on a new connection: it must
        not keep routing on the plan before). A connection that holds the last plan gets the change as a
        delta (``runtime/plan_delta.py``), any other the whole plan."""
        if not self.election.holds():  # suspended: published once leadership is confirmed again
            self.unpublished = True
            return
        self.unpublished = False
        pplan = self.builder.build()
        if pplan is None:
            log.info("waiting for %s", self.builder.waiting())
            return
        before = self.published
        if before is not None and same_plan(pplan, before) and not force:
            if registered is not None and self.plan_sent.get(registered) != before.version:
                registered.write(self.published_frame)
                self.plan_sent[registered] = before.version
            return
        pplan = versioned(pplan, before.version + 1 if before is not None else first_version())
        frame = self.published_frame = control_frame(physical_plan=pplan)
        delta = control_frame(plan_delta=plan_delta(before, pplan)) if before is not None else None
        if delta is not None and len(delta) >= len(frame):
            delta = None  # a change of most of the plan: the whole is smaller
        for conn in self.stmgrs.values():
            known = delta is not None and self.plan_sent.get(conn) == before.version
            conn.write(delta if known else frame)
            self.plan_sent[conn] = pplan.version
        self._writes.put_nowait((Kind.PHYSICAL_PLAN, pplan, ()))
        self.published = pplan
        log.info("physical plan %d published: %d instances, status %s", pplan.version, len(pplan.instances),
                 schema.TopologyStatus._VALUES_TO_NAMES.get(pplan.status))
        if self.checkpoints is not None:
            self.carry_out(self.checkpoints.on_plan(pplan, time.monotonic()))

    # checkpoints ---------------------------------------------------------------------------
    def carry_out(self, actions: list) -> None:
        """The checkpoint coordinator's actions, in order."""
        for action in actions:
            if isinstance(action, Broadcast):
                frame = control_frame(checkpoint=action.message)
                for conn in self.stmgrs.values():
                    conn.write(frame)
            elif isinstance(action, Record):
                self._writes.put_nowait((Kind.CHECKPOINTS, action.record, action.then))
            elif isinstance(action, Collect):
                self.lifecycle.spawn(asyncio.to_thread(self.collect, set(action.keep)), "collect checkpoints",
                                     critical=False)

    def collect(self, keep: set) -> None:
        """Delete every checkpoint in storage but ``keep`` (a worker thread)."""
        try:
            storage = self.env.checkpoint_storage()
            for cid in checkpoint_ids(storage, self.env.name):
                if cid not in keep:
                    storage.delete(checkpoint_dir(self.env.name, cid))
        except StateError as e:  # storage may be unreachable for a while: the next collection retries
            log.warning("cannot delete old checkpoints: %s", e)

    async def tick_checkpoints(self) -> None:
        while True:
            await asyncio.sleep(min(0.1, self.checkpoints.interval / 4))
            if self.election.holds():
                self.carry_out(self.checkpoints.on_tick(time.monotonic()))

    async def write_state(self) -> None:
        """The one writer of this leader's records, in order, each only while it still leads."""
        while True:
            kind, value, then = await self._writes.get()
            if not self.election.holds():
                continue
            try:
                await asyncio.to_thread(self.env.state.put, kind, self.env.name, value)
            except StateError as e:  # the state manager is unreachable for now
                log.warning("cannot write %s: %s", kind.value, e)
                continue
            if self.leading():
                self.carry_out(list(then))

    def on_packing(self, packing: Optional[schema.PackingPlan]) -> None:
        if self.builder is None or packing is None or packing == self.builder.packing:
            return
        log.info("packing plan changed to %s", packing.id)
        self.builder.set_packing(packing)
        self.publish()

    def on_execution(self, execution: Optional[schema.ExecutionState]) -> None:
        if self.builder is None or execution is None:
            return
        if (execution.status, execution.max_spout_pending) == (self.builder.status, self.builder.max_spout_pending):
            return
        log.info("status %s, max spout pending %s", schema.TopologyStatus._VALUES_TO_NAMES.get(execution.status),
                 execution.max_spout_pending)
        self.builder.status, self.builder.max_spout_pending = execution.status, execution.max_spout_pending
        self.publish()

    # leadership --------------------------------------------------------------------------
    def on_session(self, session: Session) -> None:
        if session is Session.LOST and self.builder is not None:
            self.step_down("the state manager session was lost")

    def step_down(self, why: str) -> None:
        """Stop serving at once: another candidate may lead from now on."""
        if self.resigned.is_set():
            return
        self.resigned.set()
        log.warning("stopped leading (%s): closing %d connections", why, len(self.conns))
        self.stmgrs.clear()
        for conn in list(self.conns):
            conn.close()

    async def watch_lease(self) -> None:
        while not self.resigned.is_set():
            if self.election.ended():
                self.step_down("leadership ended: cut off from the state manager past its lease, or session lost")
                return
            if self.unpublished and self.election.holds():
                self.publish()
            await asyncio.sleep(self.LEASE_CHECK_SECS)

    async def lead(self, location: schema.TMasterLocation) -> None:
        """One term as leader: from winning the election until leadership ends or SIGTERM."""
        env = self.env
        self.resigned.clear()
        self.metrics = MetricsStore()
        self.published = None
        self.plan_sent.clear()
        self.stmgrs.clear()
        self._writes = asyncio.Queue()
        cancels: list = []
        tasks: list = []
        try:
            get = env.state.get
            execution = await asyncio.to_thread(get, Kind.EXECUTION_STATE, env.name) or env.execution
            packing = await asyncio.to_thread(get, Kind.PACKING_PLAN, env.name) or env.packing
            await asyncio.to_thread(env.state.put, Kind.TMASTER, env.name, location)
            self.checkpoints = await asyncio.to_thread(self.checkpoint_coordinator)  # before any plan is published
            self.builder = PlanBuilder(env.name, location, packing, execution.status, execution.max_spout_pending)
            call = self.loop.call_soon_threadsafe
            watch = env.state.watch  # registering a ZooKeeper watch reads the node: not on the loop
            cancels.append(await asyncio.to_thread(watch, Kind.PACKING_PLAN, env.name,
                                                   lambda p: call(self.on_packing, p)))
            cancels.append(await asyncio.to_thread(watch, Kind.EXECUTION_STATE, env.name,
                                                   lambda e: call(self.on_execution, e)))
            spawn = self.lifecycle.spawn
            tasks += [spawn(self.check_heartbeats(), "check heartbeats"), spawn(self.write_state(), "write state"),
                      spawn(self.watch_lease(), "watch the lease")]
            if self.checkpoints is not None:
                tasks.append(spawn(self.tick_checkpoints(), "checkpoint ticks"))
            log.info("leading: topology master of %r serving on %s:%d", env.name, location.host,
                     location.control_port)
            done = self.loop.create_task(self.resigned.wait())
            stopping = self.loop.create_task(self.lifecycle.wait_stopping())
            await asyncio.wait([done, stopping], return_when=asyncio.FIRST_COMPLETED)
            for waiter in (done, stopping):
                waiter.cancel()
        except StateError as e:  # cannot take office (the state manager is cut off): compete again
            log.warning("leadership of %r given up: %s", env.name, e)
        finally:
            for cancel in cancels:
                cancel()
            for task in tasks:
                task.cancel()
            self.step_down("stopping" if self.lifecycle.stopping else "leadership ended")
            self.builder = None
            self.checkpoints = None
            if self.lifecycle.stopping and self.election.holds():
                try:
                    await asyncio.to_thread(env.state.delete, Kind.TMASTER, env.name)
                except StateError as e:  # the record is ephemeral: it goes with this process's session
                    log.warning("cannot remove the topology master's record: %s", e)

    def checkpoint_coordinator(self) -> Optional[CheckpointCoordinator]:
        """This term's coordinator, from the record of earlier terms (a topology that checkpoints)."""
        from squall.stateful import checkpointing

        config = self.env.config
        if not checkpointing(self.env.topology, config):
            return None
        return CheckpointCoordinator(float(config["topology.state.checkpoint.interval.secs"]),
                                     float(config["squall.state.checkpoint.timeout.secs"]),
                                     int(config["squall.state.checkpoints.kept"]),
                                     config["topology.reliability.mode"],
                                     self.env.state.get(Kind.CHECKPOINTS, self.env.name))

    # lifecycle -------------------------------------------------------------------------
    async def check_heartbeats(self) -> None:
        while True:
            await asyncio.sleep(min(1.0, self.hb_timeout / 3))
            now = time.monotonic()
            for conn, seen in list(self.last_seen.items()):
                if isinstance(conn.peer, StMgrPeer) and now - seen > self.hb_timeout:
                    conn.abort(f"no heartbeat for {now - seen:.1f}s")

    async def report_metrics(self) -> None:
        """Send this process's own row to container 0's metrics manager every bucket."""
        port = self.env.launch.get("metricsmgr_port")
        bucket = float(self.env.config["topology.builtin.metrics.bucket.size.secs"])
        host = "127.0.0.1" if self.env.bind_host in ("", "0.0.0.0") else self.env.bind_host
        sender = MetricsSender(self.loop, self.env.name, self.env.secret, self.env.max_frame, host, port,
                               {"role": schema.Role.TMASTER, "container": 0})
        last = time.time()
        while port:
            await asyncio.sleep(bucket)
            now = time.time()
            user = {"stmgrs": len(self.stmgrs), "leading": self.leading()}
            if self.checkpoints is not None and self.leading():  # a standby's old term's figures are no news
                user["checkpoints"] = checkpoint_figures(self.checkpoints.stats())
            await sender.send(schema.MetricsRow(
                ts=now, interval_secs=now - last, process="tmaster", component=TMASTER_COMPONENT, task_id=None,
                emit_count=0, execute_count=0, ack_count=0, fail_count=0, queue_depth=0, backpressure_ms=0.0,
                user=json.dumps(user), pid=os.getpid(), container=0))
            last = now

    async def serve(self) -> None:
        env = self.env
        self.loop = asyncio.get_running_loop()
        self.lifecycle.bind(self.loop)
        listener = listen_socket(env.bind_host, 0)
        port = listener.getsockname()[1]
        location = schema.TMasterLocation(topology_name=env.name, host=env.advertised_host, control_port=port,
                                          pid=os.getpid(), run_id=env.execution.run_id)
        self.election = env.state.election(env.name, f"{location.host}:{port} pid {location.pid}")
        env.state.add_listener(lambda session: self.loop.call_soon_threadsafe(self.on_session, session))
        server = await self.loop.create_server(lambda: _conn(self, env), sock=listener)
        reporter = self.lifecycle.spawn(self.report_metrics(), "report metrics")
        try:
            while not self.lifecycle.stopping:
                log.info("competing for leadership of %r", env.name)
                if not await asyncio.to_thread(self.election.acquire, self.lifecycle.stop_requested):
                    break
                await self.lead(location)
                await asyncio.to_thread(self.election.release)
        finally:
            reporter.cancel()
            server.close()
            await asyncio.to_thread(self.election.release)

    def stop(self) -> None:
        """Stop (SIGTERM): from any thread."""
        self.lifecycle.stop()


def _conn(handler: TMaster, env: "RuntimeEnv") -> Connection:
    return Connection(handler, env.name, env.secret, True, env.max_frame, gate=handler.gate)


def run(env: "RuntimeEnv") -> int:
    tm = TMaster(env)
    return serve_role(tm.lifecycle, tm.serve)
