"""The executor: the first process of every container.

``python -m squall.runtime.executor --topology T --container N --state FILE``

Container 0 runs ``squall.tmaster.candidates`` topology masters (one leads,
the others wait as standbys) and a metrics manager; container N > 0 runs a
stream manager, a metrics manager and one process per instance of its
ContainerPlan. The executor binds the daemons' listening sockets itself and
hands them down (so a restarted stream manager keeps its port), restarts dead
children under the restart policy (``squall.supervision``: a budget within a
sliding window, with backoff), applies packing-plan changes as a diff (same
task id: untouched process), forwards SIGTERM/SIGINT and exits leaving no
child behind.

It keeps an ephemeral record ``containers/<topology>/<id>`` of its processes
(pid, restarts, exits, and the reason once one is past its budget): the
topology's status is read from these records. A background thread writes it,
so the loop never waits on the state manager, and creates it again after a
lost session; if another executor has taken the id meanwhile (on YARN, where
ids are claimed: ``squall.runtime.claim``), this one stops with
``EXIT_CLAIM_LOST`` and YARN relaunches it to claim a free id. On YARN an
executor started with ``--service`` claims its id before anything else.

It rotates its children's log files and its own by size
(``squall.log.max.mb``, ``squall.log.backups``; ``squall.runtime.logrotate``).

A task that leaves the packing plan is *retired*, not killed: it keeps running
until the physical plan of the new packing plan is in force (no sender picks it
any more) and then for ``squall.executor.drain.secs`` (frames batched with the
old plan are still on their way through instances, stream managers and kernel
buffers); then it gets SIGTERM, drains its socket, calls ``close()`` and exits
(SIGKILL only after ``squall.executor.kill.grace.secs``). The executor's loop
never blocks on it.

``wanted_processes`` and ``diff`` are pure; ``Executor`` is the loop.
"""
from __future__ import annotations

import json
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, replace
from typing import Any, Optional

from squall.idl import schema
from squall.logical import instance_process
from squall.runtime.bootstrap import ProcessArgs, RuntimeStartError, load_env, parse_args, setup_logging
from squall.runtime.claim import SKEIN_CONTAINER_ENV, YARN_CONTAINER_ENV, claim, record_application
from squall.runtime.logrotate import own_output_file, rotate
from squall.supervision import RestartBudget, RestartPolicy, log_tail

log = logging.getLogger("squall.runtime.executor")

# Exit status of an executor whose container id another executor took while it was cut off.
EXIT_CLAIM_LOST = 75
# Seconds between log size checks.
ROTATE_EVERY_SECS = 5.0


@dataclass(frozen=True)
class ProcessSpec:
    """One child process as a value: equal specs are the same process."""

    name: str
    role: str
    task: Optional[int] = None
    tasks: tuple = ()  # every task the process runs: ``task`` and the rest of its chain

    @property
    def log_file(self) -> str:
        return f"{self.name}.log"


def wanted_processes(container_id: int, container_plan: Any, tmasters: int = 1, chain_list: Any = ()) -> dict:
    """name -> ProcessSpec of everything container ``container_id`` should run: one process per task,
    but one per chain instance for the tasks of ``chain_list`` (``squall.chaining.chains``)."""
    if container_id == 0:
        specs = [ProcessSpec("metricsmgr", "metricsmgr")]
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


def diff(current: dict, wanted: dict) -> tuple:
    """(specs to start, names to stop): only the difference."""
    start = [s for n, s in wanted.items() if current.get(n) != s]
    stop = [n for n, s in current.items() if wanted.get(n) != s]
    return start, stop


class _Child:
    def __init__(self, spec: ProcessSpec, policy: RestartPolicy):
        self.spec = spec
        self.popen: Optional[subprocess.Popen] = None
        self.started_at = 0.0
        self.budget = RestartBudget(policy)
        self.crashes = 0
        self.last_exit: Optional[int] = None
        self.next_start = 0.0
        self.failure: Optional[str] = None  # past its budget: not restarted


class StatusPublisher:
    """Writes the container's record from a thread: on every change, again every
    ``every`` seconds and at once after the state manager reconnects. A lost
    session took the ephemeral record with it: the record is created anew,
    and if another executor holds it by then, ``on_lost`` is called."""

    def __init__(self, state: Any, topology: str, container: int, on_lost: Any, every: float = 5.0):
        from squall.state import member

        self.state, self.name = state, member(topology, container)
        self.every = every
        self.on_lost = on_lost
        self._status: Any = None
        self._recreate = False
        self._lost = False
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="container-status", daemon=True)
        state.add_listener(self._on_session)

    def _on_session(self, session: Any) -> None:
        from squall.state import Session

        if session is Session.LOST:
            self._recreate = True
        self._wake.set()

    def publish(self, status: Any) -> None:
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


class Executor:
    def __init__(self, env: Any):
        self.env = env
        self.args: ProcessArgs = env.args
        self.container = env.args.container
        cfg = env.config
        self.policy = RestartPolicy.from_config(cfg)
        self.tmasters = int(cfg["squall.tmaster.candidates"])
        self.status = StatusPublisher(env.state, env.name, self.container, self._claim_lost)
        self.claim_lost = False
        self.grace = float(cfg["squall.executor.kill.grace.secs"])
        self.python = env.execution.python or sys.executable
        self.log_dir = env.log_dir
        self.log_max_bytes = int(cfg["squall.log.max.mb"]) * 1024 * 1024
        self.log_backups = int(cfg["squall.log.backups"])
        self.next_rotate = 0.0
        self.children: dict = {}
        self.stopping = False
        self.new_plan: Any = None
        self.plan_changed = False
        self.sockets: dict = {}  # role -> the listening socket it is handed (nobody else inherits it)
        self.launch_file = os.path.join(self.log_dir, "launch.json")
        self.retiring: list = []  # [child, packing plan id, deadline, end of drain or None]
        self.retire_timeout = float(cfg["squall.submit.timeout.secs"])
        self.drain = float(cfg["squall.executor.drain.secs"])
        self.exiting: list = []  # (child, SIGKILL time): retired children sent SIGTERM
        self.leaving: Optional[str] = None  # plan id without this container

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
    def command(self, spec: ProcessSpec) -> list:
        args = replace(self.args, role=spec.role, task=spec.task, launch=self.launch_file)
        return [self.python, "-m", "squall.runtime.process", *args.argv()]

    def start(self, child: _Child) -> None:
        spec = child.spec
        path = os.path.join(self.log_dir, spec.log_file)
        with open(path, "ab") as logf:
            child.popen = subprocess.Popen(self.command(spec), stdin=subprocess.DEVNULL, stdout=logf,
                                           stderr=subprocess.STDOUT,
                                           pass_fds=[s.fileno() for r, s in self.sockets.items() if r == spec.role],
                                           close_fds=True)
        child.started_at = time.monotonic()
        restarts = child.budget.restarts(child.started_at)
        log.info("started %s (pid %d)%s", spec.name, child.popen.pid,
                 f", restart {restarts} within the window" if restarts else "")

    def apply(self, wanted: dict, plan_id: Optional[str] = None) -> None:
        """Start what is new now; stop what left once the physical plan of ``plan_id``
        is published (senders no longer route to it) and the drain period has
        passed, or after a deadline."""
        current = {n: c.spec for n, c in self.children.items()}
        start, stop = diff(current, wanted)
        taken = {t for s in start for t in s.tasks}
        for name in stop:
            child = self.children.pop(name)
            if plan_id is None or taken.intersection(child.spec.tasks):
                # a task runs in one process at a time: two would take turns at the stream manager, and
                # a spout would emit twice (a chain an update splits)
                self.terminate([child])
            else:
                log.info("%s left the packing plan; stopping it %.1fs after plan %s is running", name,
                         self.drain, plan_id)
                self.retiring.append([child, plan_id, time.monotonic() + self.retire_timeout, None])
        for spec in start:
            child = self.children[spec.name] = _Child(spec, self.policy)
            self.start(child)
        self.publish_status()

    def publish_status(self) -> None:
        now = time.monotonic()
        processes = [
            schema.ProcessStatus(name=c.spec.name, pid=c.popen.pid if c.popen is not None else 0,
                                 restarts=c.budget.restarts(now), crashes=c.crashes, last_exit=c.last_exit,
                                 failure=c.failure, log_file=os.path.join(self.log_dir, c.spec.log_file))
            for _, c in sorted(self.children.items())
        ]
        self.status.publish(schema.ContainerStatus(container=self.container, host=socket.gethostname(),
                                                   executor_pid=os.getpid(), updated=time.time(),
                                                   processes=processes,
                                                   yarn_container=os.environ.get(YARN_CONTAINER_ENV),
                                                   skein_container=os.environ.get(SKEIN_CONTAINER_ENV)))

    def rotate_logs(self) -> None:
        """Rotate every log file of this container above ``squall.log.max.mb`` (every few seconds)."""
        now = time.monotonic()
        if now < self.next_rotate:
            return
        self.next_rotate = now + ROTATE_EVERY_SECS
        paths = [os.path.join(self.log_dir, c.spec.log_file) for c in self.children.values()]
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
        """Retiring children: wait for their plan, then the drain period, then SIGTERM (no waiting here)."""
        now = time.monotonic()
        keep, done = [], []
        running: dict = {}
        for entry in self.retiring:
            child, plan_id, deadline, drained_at = entry
            if drained_at is None:
                if plan_id not in running:
                    # a later update may have replaced plan_id before it ran: its plan counts too
                    latest = getattr(self.env.packing, "id", plan_id)
                    running[plan_id] = self.plan_running(plan_id) or (latest != plan_id
                                                                      and self.plan_running(latest))
                if running[plan_id]:
                    drained_at = entry[3] = now + self.drain
                    log.info("plan %s is running; %s drains for %.1fs", plan_id, child.spec.name, self.drain)
                elif now >= deadline:
                    log.warning("plan %s not running after %.0fs; stopping %s anyway", plan_id,
                                self.retire_timeout, child.spec.name)
                    drained_at = now
            if drained_at is not None and now >= drained_at:
                done.append(child)
            else:
                keep.append(entry)
        self.retiring = keep
        if done:
            log.info("stopping %s", [c.spec.name for c in done])
            self.exiting.extend((c, now + self.grace) for c in done if self._send(c, signal.SIGTERM))

    def reap_exiting(self) -> None:
        """Retired children that got SIGTERM: forget the ones gone, SIGKILL those past the grace period."""
        now = time.monotonic()
        keep = []
        for child, kill_at in self.exiting:
            p = child.popen
            if p is None or p.poll() is not None:
                if p is not None:
                    log.info("%s (pid %d) exited with %s", child.spec.name, p.pid, p.returncode)
                child.popen = None
            elif now >= kill_at:
                log.warning("pid %d ignored SIGTERM for %.1fs; killing it", p.pid, self.grace)
                p.kill()
                p.wait()
                child.popen = None
            else:
                keep.append((child, kill_at))
        self.exiting = keep

    @staticmethod
    def _send(child: _Child, signum: int) -> bool:
        p = child.popen
        if p is None or p.poll() is not None:
            return False
        try:
            p.send_signal(signum)
        except ProcessLookupError:
            return False
        return True

    def check_children(self) -> None:
        """Restart dead children under the restart policy; give up on one past its budget."""
        now = time.monotonic()
        changed = False
        for child in self.children.values():
            p = child.popen
            if p is not None and p.poll() is not None:
                changed = True
                code = child.last_exit = p.returncode
                child.popen = None
                child.crashes += 1
                delay = child.budget.on_exit(now)
                if delay is None:
                    path = os.path.join(self.log_dir, child.spec.log_file)
                    child.failure = (f"container {self.container}: {child.spec.name} exited with {code}, past its "
                                     f"restart budget ({self.policy.describe()}); the end of its log ({path}):\n"
                                     f"{log_tail(path)}")
                    log.error("%s (pid %d) exited with %s; not restarting it: past its budget of %s",
                              child.spec.name, p.pid, code, self.policy.describe())
                    continue
                child.next_start = now + delay
                log.warning("%s (pid %d) exited with %s after %.1fs; restarting in %.1fs (%d restarts within %gs, "
                            "budget %d)", child.spec.name, p.pid, code, now - child.started_at, delay,
                            child.budget.restarts(now), self.policy.window, self.policy.max_restarts)
            elif p is None and child.failure is None and now >= child.next_start:
                self.start(child)
                changed = True
        if changed:
            self.publish_status()

    def terminate(self, children: list) -> None:
        procs = [c.popen for c in children if c.popen is not None and c.popen.poll() is None]
        for p in procs:
            try:
                p.send_signal(signal.SIGTERM)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + self.grace
        for p in procs:
            try:
                p.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                log.warning("pid %d ignored SIGTERM for %.1fs; killing it", p.pid, self.grace)
                p.kill()
                p.wait()
        for c in children:
            c.popen = None

    def chains(self) -> list:
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
    def on_plan(self, plan: Any) -> None:  # state watch thread
        self.new_plan = plan
        self.plan_changed = True

    def run(self) -> int:
        from squall.state import Kind

        self.bind()
        signal.signal(signal.SIGTERM, self._signal)
        signal.signal(signal.SIGINT, self._signal)
        cancel = self.env.state.watch(Kind.PACKING_PLAN, self.env.name, self.on_plan)
        code = 0
        try:
            if self.container != 0 and self.env.container_plan() is None:
                log.info("container %d is not in the packing plan; nothing to run", self.container)
                return 0
            self.apply(wanted_processes(self.container, self.env.container_plan(), self.tmasters, self.chains()))
            while not self.stopping:
                time.sleep(0.1)
                if self.plan_changed:
                    self.plan_changed = False
                    plan = self.new_plan
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
                if self.stopping:
                    break
                self.check_children()
                self.rotate_logs()
                if self.retiring:
                    self.retire()
                if self.exiting:
                    self.reap_exiting()
        finally:
            cancel()
            rest = list(self.children.values()) + [e[0] for e in self.retiring] + [c for c, _ in self.exiting]
            log.info("stopping %d processes", len([c for c in rest if c.popen is not None]))
            # instances first: they drain what their stream manager still holds for them and flush
            # their output through it; the daemons stop once they are gone (each step bounded by the grace)
            self.terminate([c for c in rest if c.spec.role == "instance"])
            self.terminate([c for c in rest if c.spec.role != "instance"])
            self.retiring = []
            self.exiting = []
            for s in self.sockets.values():
                s.close()
            self.status.close()
        log.info("executor of container %d exits", self.container)
        return EXIT_CLAIM_LOST if self.claim_lost else code

    def _signal(self, signum: int, frame: Any) -> None:
        log.info("received signal %d; stopping", signum)
        self.stopping = True

    def _claim_lost(self) -> None:  # status thread
        self.claim_lost = True
        self.stopping = True


def main(argv: Optional[list] = None) -> int:
    args = parse_args(argv, "python -m squall.runtime.executor")
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
