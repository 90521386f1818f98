"""The executor: the first process of every container.

``python -m squall.runtime.executor --topology T --container N --state FILE``

Container 0 runs ``squall.tmaster.candidates`` topology masters (one leads,
the others wait as standbys) and a metrics manager; container N > 0 runs a
stream manager, a metrics manager and one process per instance of its
ContainerPlan. The executor binds the daemons' listening sockets itself and
hands them down (so a restarted stream manager keeps its port), restarts dead
children under the restart policy, applies packing-plan changes as a diff
(same task id: untouched process), forwards SIGTERM/SIGINT and exits leaving
no child behind. Its rules are the one supervision model
(``squall.supervision.Supervision``: a restart budget within a sliding
window, with backoff; leavers stopped at a deadline, SIGKILL after the
grace); packing-plan changes come from the state watch through a queue, the
only thing that crosses threads into the loop; its command line and its
children's are ``squall.processargs.ProcessArgs``.

It keeps an ephemeral record ``containers/<topology>/<id>`` of its processes
(pid, restarts, exits, and the reason once one is past its budget): the
topology's status is read from these records. A background thread writes it,
so the loop never waits on the state manager, and creates it again after a
lost session; if another executor has taken the id meanwhile (on YARN, where
ids are claimed: ``squall.runtime.claim``), this one stops with
``EXIT_CLAIM_LOST`` and YARN relaunches it to claim a free id. On YARN an
executor started with ``--service`` claims its id before anything else.

It serves the container's debug server (``squall.runtime.debug_server``: its logs searched, stacks and
profiles of its tasks) from a thread; the loop only hands it the task -> process table when that changes,
and its address goes into the container's record.

It rotates its children's log files and its own by size
(``squall.log.max.mb``, ``squall.log.backups``; ``squall.runtime.logrotate``).

A task that leaves the packing plan is *retired*, not killed: it keeps running
until the physical plan of the new packing plan is in force (no sender picks it
any more) and then for ``squall.executor.drain.secs`` (frames batched with the
old plan are still on their way through instances, stream managers and kernel
buffers); then it gets SIGTERM, drains its socket, calls ``close()`` and exits
(SIGKILL only after ``squall.executor.kill.grace.secs``). The executor's loop
never blocks on it.

``wanted_processes``, ``diff`` and ``Supervision`` are pure; ``Executor`` is the loop.
"""
from __future__ import annotations

import json
import logging
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, replace
from typing import Callable, Mapping, NamedTuple, Optional, Sequence, Union

import psutil

from squall.idl import schema
from squall.logical import instance_process
from squall.processargs import ProcessArgs
from squall.runtime.bootstrap import RuntimeEnv, RuntimeStartError, load_env, setup_logging
from squall.runtime.claim import SKEIN_CONTAINER_ENV, YARN_CONTAINER_ENV, claim, record_application
from squall.runtime.debug_agent import forget_process
from squall.runtime.debug_server import DebugServer, ServerSettings
from squall.runtime.debugging import DebugSettings, events_path
from squall.runtime.logrotate import own_output_file, rotate
from squall.runtime.profiles import Target
from squall.runtime.readiness import ReadyPipe
from squall.state import Session, StateManager
from squall.supervision import (RestartPolicy, Start, Supervised, Supervision, Terminate, log_tail,
                                stop_processes)

log = logging.getLogger("squall.runtime.executor")

# Exit status of an executor whose container id another executor took while it was cut off.
EXIT_CLAIM_LOST = 75
# Seconds between log size checks.
ROTATE_EVERY_SECS = 5.0
# Seconds the loop waits for an event before it looks at its children again.
POLL_SECS = 0.1


@dataclass(frozen=True)
class ProcessSpec:
    """One child process as a value: equal specs are the same process."""

    name: str
    role: str
    task: Optional[int] = None
    tasks: tuple[int, ...] = ()  # every task the process runs: ``task`` and the rest of its chain

    @property
    def log_file(self) -> str:
        return f"{self.name}.log"


def wanted_processes(container_id: int, container_plan: Optional[schema.ContainerPlan], tmasters: int = 1,
                     chain_list: Sequence[tuple[str, ...]] = ()) -> dict[str, ProcessSpec]:
    """name -> ProcessSpec of everything container ``container_id`` should run: one process per task,
    but one per chain instance for the tasks of ``chain_list`` (``squall.chaining.chains``)."""
    if container_id == 0:
        specs = [ProcessSpec("metricsmgr", "metricsmgr"), ProcessSpec("health", "health")]
        if tmasters == 1:
            specs.append(ProcessSpec("tmaster", "tmaster"))
        else:
            specs += [ProcessSpec(f"tmaster-{k}", "tmaster") for k in range(tmasters)]
    elif container_plan is None:
        return {}
    else:
        from squall.chaining import chain_instances

        specs = [ProcessSpec("metricsmgr", "metricsmgr"), ProcessSpec("stmgr", "stmgr")]
        chained = chain_instances(list(chain_list), [i.id for i in container_plan.instances])
        members = {t for tasks in chained.values() for _, t in tasks[1:]}
        for i in sorted(container_plan.instances, key=lambda i: i.id.task_id):
            task = i.id.task_id
            if task not in members:
                chain = chained.get(task, ())
                specs.append(ProcessSpec(instance_process(task, i.id.component, chain), "instance", task,
                                         tuple(t for _, t in chain) or (task,)))
    return {s.name: s for s in specs}


def diff(current: Mapping[str, ProcessSpec],
         wanted: Mapping[str, ProcessSpec]) -> tuple[list[ProcessSpec], list[str]]:
    """(specs to start, names to stop): only the difference."""
    start = [s for n, s in wanted.items() if current.get(n) != s]
    stop = [n for n, s in current.items() if wanted.get(n) != s]
    return start, stop


class StatusPublisher:
    """Writes the container's record from a thread: on every change, again every
    ``every`` seconds and at once after the state manager reconnects. A lost
    session took the ephemeral record with it: the record is created anew,
    and if another executor holds it by then, ``on_lost`` is called."""

    def __init__(self, state: StateManager, topology: str, container: int, on_lost: Callable[[], None],
                 every: float = 5.0):
        from squall.state import member

        self.state, self.name = state, member(topology, container)
        self.every = every
        self.on_lost = on_lost
        self._status: Optional[schema.ContainerStatus] = None
        self._recreate = False
        self._lost = False
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="container-status", daemon=True)
        state.add_listener(self._on_session)

    def _on_session(self, session: Session) -> None:
        if session is Session.LOST:
            self._recreate = True
        self._wake.set()

    def publish(self, status: schema.ContainerStatus) -> None:
        self._status = status
        self._wake.set()
        if not self._thread.is_alive() and not self._stop.is_set():
            self._thread.start()

    def _run(self) -> None:
        from squall.state import AlreadyExists, Kind, StateError

        while not self._stop.is_set():
            self._wake.wait(self.every)
            self._wake.clear()
            if self._stop.is_set():
                return
            try:
                if self._recreate:
                    self.state.create(Kind.CONTAINER, self.name, self._status)
                    self._recreate = False
                else:
                    self.state.put(Kind.CONTAINER, self.name, self._status)
            except AlreadyExists:
                log.error("container record %s was taken by another executor while this one was cut off",
                          self.name)
                self._lost = True
                self._stop.set()
                self.on_lost()
                return
            except StateError as e:
                log.warning("cannot write the container record %s: %s", self.name, e)

    def close(self) -> None:
        from squall.state import Kind, StateError

        self._stop.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
        if self._lost:
            return  # the record is another executor's now
        try:
            self.state.delete(Kind.CONTAINER, self.name)
        except StateError as e:
            log.warning("cannot remove the container record %s: %s", self.name, e)


class PlanChanged(NamedTuple):
    """The packing plan in the state manager changed (None: removed)."""

    plan: Optional[schema.PackingPlan]


class ClaimLost(NamedTuple):
    """Another executor took this container's id while this one was cut off."""


LoopEvent = Union[PlanChanged, ClaimLost]


class Executor:
    def __init__(self, env: RuntimeEnv):
        self.env = env
        self.args: ProcessArgs = env.args
        self.container = env.args.container
        cfg = env.config
        self.policy = RestartPolicy.from_config(cfg)
        self.tmasters = int(cfg["squall.tmaster.candidates"])
        # from the state watch and the status thread to the loop: nothing else crosses threads
        self.events: queue.Queue[LoopEvent] = queue.Queue()
        self.status = StatusPublisher(env.state, env.name, self.container, lambda: self.events.put(ClaimLost()))
        self.claim_lost = False
        self.grace = float(cfg["squall.executor.kill.grace.secs"])
        self.python = env.execution.python or sys.executable
        self.log_dir = env.log_dir
        self.log_max_bytes = int(cfg["squall.log.max.mb"]) * 1024 * 1024
        self.log_backups = int(cfg["squall.log.backups"])
        self.next_rotate = 0.0
        self.supervision: Supervision[psutil.Popen] = Supervision(self.policy, self.grace)
        self.specs: dict[str, ProcessSpec] = {}  # what the current plan wants
        self.roles: dict[str, str] = {}  # name -> role of everything started (leaving ones too)
        self.ready_pipes: dict[str, ReadyPipe] = {}  # instance processes that have not said they are initialized
        self.initialized: set[str] = set()  # instance processes whose current process said it
        self.stopping = False  # set by the signal handler (the loop's own thread)
        self.sockets: dict[str, socket.socket] = {}  # role -> the listening socket it is handed
        self.launch_file = os.path.join(self.log_dir, "launch.json")
        self.retire_timeout = float(cfg["squall.submit.timeout.secs"])
        self.drain = float(cfg["squall.executor.drain.secs"])
        self.draining: set[str] = set()  # plan ids whose physical plan ran: their leavers drain
        self.leaving: Optional[str] = None  # plan id without this container
        self.debug_server = DebugServer(env.bind_host, ServerSettings(
            container=self.container, host=env.advertised_host, secret=env.secret, log_dir=self.log_dir,
            debug_dir=env.debug_dir, max_matches=int(cfg["squall.debug.search.max.matches"]),
            profiler=str(cfg["squall.debug.profiler"]), interval=float(cfg["squall.debug.sample.interval.ms"]) / 1000,
            max_secs=float(cfg["squall.debug.profile.max.secs"])))

    # sockets handed to the daemons -------------------------------------------------
    def bind(self) -> None:
        from squall.runtime.protocol import listen_socket

        os.makedirs(self.log_dir, exist_ok=True)
        launch = {}
        roles = ["metricsmgr"] + (["stmgr"] if self.container != 0 else [])
        for role in roles:
            sock = listen_socket(self.env.bind_host, 0)
            self.sockets[role] = sock
            launch[f"{role}_port"] = sock.getsockname()[1]
            launch[f"{role}_fd"] = sock.fileno()
        tmp = self.launch_file + ".tmp"
        with open(tmp, "w") as f:
            json.dump(launch, f)
        os.replace(tmp, self.launch_file)
        log.info("container %d: %s", self.container, {k: v for k, v in launch.items() if k.endswith("port")})

    # children ---------------------------------------------------------------------------
    def command(self, spec: ProcessSpec) -> list[str]:
        return replace(self.args, role=spec.role, task=spec.task, launch=self.launch_file).command(self.python)

    def start(self, unit: Supervised[psutil.Popen], now: float) -> None:
        spec = self.specs[unit.name]
        path = os.path.join(self.log_dir, spec.log_file)
        self.forget_ready(unit.name)
        pipe = ReadyPipe() if spec.role == "instance" else None
        fds = [s.fileno() for r, s in self.sockets.items() if r == spec.role]
        try:
            with open(path, "ab") as logf:
                process = psutil.Popen(self.command(spec), stdin=subprocess.DEVNULL, stdout=logf,
                                       stderr=subprocess.STDOUT, close_fds=True,
                                       pass_fds=fds + ([pipe.write_fd] if pipe else []),
                                       env=pipe.child_env() if pipe else None)
        except BaseException:
            if pipe is not None:
                pipe.close()
            raise
        if pipe is not None:
            pipe.started()
            self.ready_pipes[unit.name] = pipe
        self.supervision.started(unit, process, now)
        self.roles[unit.name] = spec.role
        restarts = unit.budget.restarts(now)
        log.info("started %s (pid %d)%s", spec.name, process.pid,
                 f", restart {restarts} within the window" if restarts else "")

    def apply(self, wanted: dict[str, ProcessSpec], plan_id: Optional[str] = None) -> None:
        """Start what is new now; stop what left once the physical plan of ``plan_id``
        is published (senders no longer route to it) and the drain period has
        passed, or after a deadline."""
        now = time.monotonic()
        start, stop = diff(self.specs, wanted)
        taken = {t for s in start for t in s.tasks}
        # a task runs in one process at a time: two would take turns at the stream manager, and a spout
        # would emit twice (a chain an update splits); these stop before their replacements start
        at_once = {n for n in stop if plan_id is None or taken.intersection(self.specs[n].tasks)}
        stopped = self.supervision.want([n for n in self.specs if n not in at_once], now)
        self.stop_now(stopped)
        for unit in self.supervision.want(list(wanted), now):
            log.info("%s left the packing plan; stopping it %.1fs after plan %s is running", unit.name,
                     self.drain, plan_id)
            self.supervision.retire(unit, now + self.retire_timeout, plan_id)
        self.specs = dict(wanted)
        self.act(now)
        self.publish_status()

    def stop_now(self, units: list[Supervised[psutil.Popen]]) -> None:
        """Stop ``units`` (leaving) and wait for them, within the grace period."""
        stop_processes([u.process for u in units if u.process is not None], self.grace)
        now = time.monotonic()
        for u in units:
            code = u.process.returncode if u.process is not None else None
            self.supervision.exited(u, code, now)
            self.forget_ready(u.name)

    def act(self, now: float) -> bool:
        """Carry out what supervision says is due; True if anything was started."""
        started = False
        for action in self.supervision.actions(now):
            unit = action.unit
            if isinstance(action, Start):
                self.start(unit, now)
                started = True
            elif unit.process is not None and isinstance(action, Terminate):
                log.info("stopping %s (pid %d)", unit.name, unit.process.pid)
                _signal(unit.process, signal.SIGTERM)
            elif unit.process is not None:
                log.warning("%s (pid %d) ignored SIGTERM for %.1fs; killing it", unit.name, unit.process.pid,
                            self.grace)
                _signal(unit.process, signal.SIGKILL)
        return started

    def publish_status(self) -> None:
        now = time.monotonic()
        processes = [
            schema.ProcessStatus(name=u.name, pid=u.process.pid if u.process is not None else 0,
                                 restarts=u.budget.restarts(now), crashes=u.crashes, last_exit=u.last_exit,
                                 failure=u.failure, log_file=os.path.join(self.log_dir, self.specs[u.name].log_file),
                                 initialized=(u.name in self.initialized) if self.roles.get(u.name) == "instance"
                                 else None)
            for _, u in sorted(self.supervision.units.items())
        ]
        self.debug_server.tasks = {task: Target(u.name, u.process.pid if u.process is not None else 0, self.env.debug_dir)
                            for u in self.supervision.units.values() if u.name in self.specs
                            for task in self.specs[u.name].tasks}
        self.status.publish(schema.ContainerStatus(container=self.container, host=socket.gethostname(),
                                                   executor_pid=os.getpid(), updated=time.time(),
                                                   processes=processes,
                                                   yarn_container=os.environ.get(YARN_CONTAINER_ENV),
                                                   skein_container=os.environ.get(SKEIN_CONTAINER_ENV),
                                                   debug_address=self.debug_server.address))

    def rotate_logs(self) -> None:
        """Rotate every log file of this container above ``squall.log.max.mb`` (every few seconds)."""
        now = time.monotonic()
        if now < self.next_rotate:
            return
        self.next_rotate = now + ROTATE_EVERY_SECS
        paths = [os.path.join(self.log_dir, s.log_file) for s in self.specs.values()] + [events_path(self.log_dir)]
        own = own_output_file()
        for path in paths + ([own] if own else []):
            if rotate(path, self.log_max_bytes, self.log_backups):
                log.info("rotated %s", path)

    def plan_running(self, plan_id: str) -> bool:
        from squall.state import Kind, StateError

        try:
            pplan = self.env.state.get(Kind.PHYSICAL_PLAN, self.env.name)
        except StateError as e:  # unreadable for now (e.g. ZooKeeper suspended): try again next round
            log.debug("cannot read the physical plan: %s", e)
            return False
        return pplan is not None and pplan.packing_plan_id == plan_id

    def retire(self) -> None:
        """Leaving children whose plan now runs drain for ``drain`` seconds, then get SIGTERM (``act``)."""
        now = time.monotonic()
        waiting = {u.label for u in self.supervision.leaving if u.label is not None} - self.draining
        latest = self.env.packing.id
        for plan_id in sorted(waiting):
            # a later update may have replaced plan_id before it ran: its plan counts too
            if self.plan_running(plan_id) or (latest != plan_id and self.plan_running(latest)):
                self.draining.add(plan_id)
                names = [u.name for u in self.supervision.leaving if u.label == plan_id]
                log.info("plan %s is running; %s drain for %.1fs", plan_id, names, self.drain)
                for u in self.supervision.leaving:
                    if u.label == plan_id:
                        self.supervision.retire(u, now + self.drain)

    def forget_ready(self, name: str) -> None:
        """``name``'s process is gone or replaced: what it said about itself no longer holds."""
        self.initialized.discard(name)
        pipe = self.ready_pipes.pop(name, None)
        if pipe is not None:
            pipe.close()

    def read_ready(self) -> bool:
        """Note the instance processes that said they are initialized; True if any did."""
        changed = False
        for name, pipe in list(self.ready_pipes.items()):
            said = pipe.poll()
            if said is None:
                continue
            self.ready_pipes.pop(name).close()
            if said:
                self.initialized.add(name)
                changed = True
        return changed

    def check_children(self) -> None:
        """Reap exits; restart dead children under the restart policy; give up on one past its budget."""
        now = time.monotonic()
        changed = self.read_ready()
        for unit in self.supervision.running():
            p = unit.process
            code = p.poll() if p is not None else None
            if p is None or code is None:
                continue
            changed = True
            self.supervision.exited(unit, code, now)
            self.forget_ready(unit.name)
            forget_process(self.env.debug_dir, p.pid)  # a SIGKILLed child left its handlers' files
            if unit.leaving:
                log.info("%s (pid %d) exited with %s", unit.name, p.pid, code)
            elif unit.failure is not None:
                path = os.path.join(self.log_dir, self.specs[unit.name].log_file)
                unit.failure = (f"container {self.container}: {unit.failure}; the end of its log ({path}):\n"
                                f"{log_tail(path)}")
                log.error("%s (pid %d) exited with %s; not restarting it: past its budget of %s",
                          unit.name, p.pid, code, self.policy.describe())
            else:
                log.warning("%s (pid %d) exited with %s after %.1fs; restarting in %.1fs (%d restarts within %gs, "
                            "budget %d)", unit.name, p.pid, code, now - unit.started_at, unit.next_start - now,
                            unit.budget.restarts(now), self.policy.window, self.policy.max_restarts)
        if self.act(now) or changed:
            self.publish_status()

    def chains(self) -> list[tuple[str, ...]]:
        """The topology's chains, as the current logical plan has them (an update that changed a
        component's parallelism may have joined or split chains)."""
        from squall.chaining import chains
        from squall.state import Kind, StateError

        if self.container != 0:
            try:
                self.env.topology = self.env.state.get(Kind.TOPOLOGY, self.env.name) or self.env.topology
            except StateError as e:
                log.warning("cannot read the logical plan (%s); chains as they were", e)
        return chains(self.env.topology)

    # the loop -----------------------------------------------------------------------------
    def on_plan(self, plan: Optional[schema.PackingPlan]) -> None:  # state watch thread
        self.events.put(PlanChanged(plan))

    def next_plan(self) -> Optional[PlanChanged]:
        """Wait for the next event up to one poll period; the latest plan change, if any (a lost claim
        stops the loop)."""
        changed: Optional[PlanChanged] = None
        try:
            event: Optional[LoopEvent] = self.events.get(timeout=POLL_SECS)
        except queue.Empty:
            return None
        while event is not None:
            if isinstance(event, ClaimLost):
                self.claim_lost = self.stopping = True
            else:
                changed = event
            try:
                event = self.events.get_nowait()
            except queue.Empty:
                event = None
        return changed

    def run(self) -> int:
        from squall.state import Kind

        self.bind()
        self.debug_server.start()
        signal.signal(signal.SIGTERM, self._signal)
        signal.signal(signal.SIGINT, self._signal)
        cancel = self.env.state.watch(Kind.PACKING_PLAN, self.env.name, self.on_plan)
        debug = DebugSettings(self.env.state, self.env.name).start()
        leave_at: Optional[float] = None
        leave_deadline = 0.0
        try:
            if self.container != 0 and self.env.container_plan() is None:
                log.info("container %d is not in the packing plan; nothing to run", self.container)
                return 0
            self.apply(wanted_processes(self.container, self.env.container_plan(), self.tmasters, self.chains()))
            while not self.stopping:
                changed = self.next_plan()
                if self.stopping:
                    break
                if changed is not None:
                    plan = changed.plan
                    if plan is None:
                        log.info("packing plan removed; stopping")
                        break
                    cplan = self.env.container_plan(plan)
                    if self.container != 0 and cplan is None:
                        log.info("container %d left the packing plan %s; stopping %.1fs after it runs",
                                 self.container, plan.id, self.drain)
                        self.leaving, leave_deadline = plan.id, time.monotonic() + self.retire_timeout
                        leave_at = None
                    else:
                        self.leaving = None
                        self.env.packing = plan
                        self.apply(wanted_processes(self.container, cplan, self.tmasters, self.chains()), plan.id)
                if self.leaving is not None:
                    now = time.monotonic()
                    if leave_at is None and (self.plan_running(self.leaving) or now > leave_deadline):
                        leave_at = now + self.drain  # frames routed here with the old plan drain first
                    if leave_at is not None and now >= leave_at:
                        break
                self.check_children()
                self.rotate_logs()
                if self.supervision.leaving:
                    self.retire()
        finally:
            cancel()
            debug.close()
            rest = self.supervision.running()
            log.info("stopping %d processes", len(rest))
            # instances first: they drain what their stream manager still holds for them and flush
            # their output through it; the daemons stop once they are gone (each step bounded by the grace)
            for first in (True, False):
                stop_processes([u.process for u in rest if u.process is not None
                                and (self.roles.get(u.name) == "instance") == first], self.grace)
            for s in self.sockets.values():
                s.close()
            self.debug_server.close()
            self.status.close()
        log.info("executor of container %d exits", self.container)
        return EXIT_CLAIM_LOST if self.claim_lost else 0

    def _signal(self, signum: int, frame: object) -> None:
        log.info("received signal %d; stopping", signum)
        self.stopping = True


def _signal(process: psutil.Popen, signum: int) -> None:
    try:
        process.send_signal(signum)
    except (ProcessLookupError, psutil.NoSuchProcess):
        pass


def main(argv: Optional[list[str]] = None) -> int:
    args = ProcessArgs.parse(argv, "python -m squall.runtime.executor")
    setup_logging("executor", args.container)
    try:
        env = load_env(args)
    except RuntimeStartError as e:
        log.error("%s", e)
        return 2
    try:
        if args.service is not None:
            wait = float(env.config["squall.executor.claim.wait.secs"])
            container = claim(env.state, env.name, args.service, wait)
            if container is None:
                log.info("no container id of service %s is free after %.0fs: this container is surplus; exiting",
                         args.service, wait)
                return 0
            env.args = replace(args, container=container, service=None)
            setup_logging("executor", container)
        record_application(env.state, env.name)
        return Executor(env).run()
    finally:
        env.close()


if __name__ == "__main__":
    sys.exit(main())
