"""The YARN scheduler: a topology is a Skein application.

- ``check`` (before anything is written): a Python for the containers, a
  bind address other containers can reach, every container shape within
  the queue's and the cluster's maximum allocation (naming the component),
  and, unless the spec only goes to a file, the client tools and a
  ResourceManager that answers.
- ``on_schedule``: stage the files (``staging``), build the spec (``spec``),
  record which service runs which container id (the scheduler record), and
  submit it through Skein (or, with ``--spec-out``, write it to a file). The
  application id goes into the scheduler record; with ``--spec-out`` the
  executors record it.
- ``on_kill``: kill the application through Skein. The executors stop by
  themselves once the topology's state is removed (the launcher removes it
  next), so a kill works when the application cannot be reached, or was
  submitted by someone else.
- ``on_restart``: kill that container's YARN container and add one to its
  service (Skein never relaunches a KILLED container); the new one claims
  the freed id.
- ``on_update``: new container ids go to the service of their shape (an
  existing one: Skein cannot add services to a running application) and
  each gets a new container; removed containers retire by themselves and
  exit cleanly, which Skein does not relaunch.
"""
from __future__ import annotations

import logging
import os
import socket
import time
from typing import TYPE_CHECKING, Mapping, Optional
from urllib.parse import urlparse

from squall.conf import Config
from squall.idl import schema
from squall.logical import topology_config
from squall.packing import normalise, renumber_containers
from squall.packing.errors import PackingError
from squall.scheduler.base import LaunchOptions, Scheduler, SchedulerError
from squall.state import Kind, StateManager, member
from squall.state.storage import open_storage
from squall.stateful import checkpointing
from squall.yarn.client import application, check_reachable, hadoop_conf, rm_client, skein_client
from squall.yarn.environment import PythonEnvironment
from squall.yarn.errors import YarnError
from squall.yarn.rest import find_queue, queue_headroom
from squall.yarn.spec import TMASTER_SERVICE, build_spec, parse_service, service_shapes, services_of, spare_shape
from squall.yarn.staging import Staged, shipped_archive, topology_archive

if TYPE_CHECKING:
    import skein

    from squall.packing import Placement

log = logging.getLogger(__name__)

LOOPBACK = ("127.0.0.1", "localhost", "::1")


def staging_dir(run_dir: str) -> str:
    return os.path.join(run_dir, "yarn")


def with_allocation_limits(config: Mapping[str, object]) -> tuple[Mapping[str, object], str]:
    """``config`` with the maximum allocation lowered to the queue's or the cluster's, when the Hadoop
    configuration says it is lower; and where the binding limit comes from."""
    conf = hadoop_conf()
    if conf is None:
        return config, "squall.yarn.max.allocation.*"
    mb, vcores, source = conf.max_allocation(config["squall.yarn.queue"])
    limited = dict(config)
    if mb is not None and mb < config["squall.yarn.max.allocation.mb"]:
        limited["squall.yarn.max.allocation.mb"] = mb
    if vcores is not None and vcores < config["squall.yarn.max.allocation.vcores"]:
        limited["squall.yarn.max.allocation.vcores"] = vcores
    return limited, source or "squall.yarn.max.allocation.*"


def checked_shapes(plan: schema.PackingPlan, config: Mapping[str, object]) -> list:
    """The plan's services, refusing a container above the queue's or the cluster's maximum allocation."""
    limited, source = with_allocation_limits(config)
    try:
        return service_shapes(plan, limited)
    except PackingError as e:
        raise PackingError(f"{e} (the maximum allocation comes from {source})") from None


class YarnScheduler(Scheduler):
    def __init__(self, state: Optional[StateManager], options: LaunchOptions = LaunchOptions()):
        self.state = state
        self.spec_out = options.spec_out
        self.offline = options.dry_run or options.spec_out is not None  # YARN is not called

    @classmethod
    def create(cls, state: StateManager, options: LaunchOptions = LaunchOptions()) -> "YarnScheduler":
        return cls(state, options)

    @property
    def launched(self) -> bool:
        return self.spec_out is None

    def interpreter(self) -> str:
        return ""  # the containers' own (squall.yarn.python or the shipped environment)

    # ---------------------------------------------------------------- submit
    def check(self, topology: schema.Topology, plan: schema.PackingPlan, config: Mapping[str, object]) -> None:
        PythonEnvironment.from_config(config)
        host = config["squall.runtime.bind.host"]
        if host in LOOPBACK:
            raise YarnError(f"squall.runtime.bind.host={host}: containers on other nodes cannot reach processes "
                            "listening there; set it to 0.0.0.0 in the cluster config")
        checked_shapes(plan, config)
        storage = config["squall.state.storage"]
        if checkpointing(topology, config) and urlparse(storage).scheme not in ("hdfs", "viewfs"):
            raise YarnError(f"squall.state.storage={storage or '(empty: the run folder)'}: a topology that checkpoints "
                            "on YARN needs an hdfs:// URI, which every container reads (a container's disk is its own)")
        if not self.offline:
            check_reachable(config)
            if checkpointing(topology, config):
                open_storage(storage, None)  # a StateError names what is wrong: nothing is launched

    def _spec(self, topology: schema.Topology, plan: schema.PackingPlan, config: Mapping[str, object], run_dir: str,
              archive: str, shipped: Optional[str] = None) -> tuple[skein.ApplicationSpec, dict[int, str]]:
        env = PythonEnvironment.from_config(config)
        staged = Staged(state_file_of(run_dir), archive, env.archive, shipped)
        shapes = checked_shapes(plan, config)
        spec = build_spec(topology.name, plan, config, staged, env, self._placement(plan, config))
        return spec, services_of(shapes)

    def _placement(self, plan: schema.PackingPlan, config: Mapping[str, object]) -> Optional[Placement]:
        """Placement hints from the cluster's resource pools, when the ResourceManager's address is known."""
        from squall.packing import place, tmaster_container_resources
        from squall.yarn.view import fetch_view

        rm = rm_client(config)
        if rm is None:
            return None
        view = fetch_view(rm, [], config)
        return place(plan, [n.pool for n in view.nodes], tmaster_container_resources(config))

    def describe(self, topology: schema.Topology, plan: schema.PackingPlan, config: Mapping[str, object], run_dir: str) -> str:
        archive = os.path.join(staging_dir(run_dir), "topology.tar.gz")
        spec, _ = self._spec(topology, plan, config, run_dir, archive)
        return spec.to_yaml()

    def on_schedule(self, execution_state: schema.ExecutionState, packing_plan: schema.PackingPlan) -> None:
        name = execution_state.topology_name
        topology = self.state.get(Kind.TOPOLOGY, name)
        config = topology_config(topology)
        archive = topology_archive(topology.source_file, staging_dir(execution_state.run_dir))
        shipped = shipped_archive(execution_state.run_dir, staging_dir(execution_state.run_dir)) \
            if self.state.get(Kind.FILES, name) is not None else None
        spec, services = self._spec(topology, packing_plan, config, execution_state.run_dir, archive, shipped)
        location = schema.SchedulerLocation(topology_name=name, scheduler="yarn", host=socket.gethostname(),
                                            executor_pids={}, services=services)
        self.state.put(Kind.SCHEDULER, name, location)
        if self.spec_out is not None:
            spec.to_file(self.spec_out)
            return
        with skein_client(config) as client:
            try:
                location.application_id = client.submit(spec)
            except Exception as e:  # Skein raises its own and gRPC's errors
                raise YarnError(f"Skein could not submit {name!r}: {e}") from e
        log.info("submitted %s as YARN application %s", name, location.application_id)
        self.state.put(Kind.SCHEDULER, name, location)

    # ---------------------------------------------------------------- runtime
    def _location(self, name: str) -> schema.SchedulerLocation:
        location = self.state.get(Kind.SCHEDULER, name)
        if location is None:
            raise SchedulerError(f"topology {name!r} has no scheduler record")
        return location

    def _config(self, name: str) -> Config:
        return topology_config(self.state.get(Kind.TOPOLOGY, name))

    def on_kill(self, execution_state: schema.ExecutionState) -> None:
        name = execution_state.topology_name
        location = self.state.get(Kind.SCHEDULER, name)
        app_id = location.application_id if location is not None else None
        if not app_id:
            log.warning("topology %r has no YARN application id yet; its containers stop by themselves once its "
                        "state is removed", name)
            return
        _remember(execution_state.run_dir, app_id)
        try:
            with skein_client(self._config(name)) as client:
                client.kill_application(app_id)
        except (YarnError, OSError, ValueError, KeyError) as e:
            log.warning("could not kill YARN application %s (%s); its containers stop by themselves once the "
                        "topology's state is removed", app_id, e)

    def on_restart(self, execution_state: schema.ExecutionState, container: Optional[int]) -> None:
        name = execution_state.topology_name
        location = self._location(name)
        services = dict(location.services or {})
        targets = sorted(services) if container is None else [container]
        records = {}
        for cid in targets:
            record = self.state.get(Kind.CONTAINER, member(name, cid))
            if cid not in services or record is None or not record.skein_container:
                raise SchedulerError(f"topology {name!r} has no running container {cid} "
                                     f"(containers: {', '.join(map(str, sorted(services)))})")
            records[cid] = record
        config = self._config(name)
        with application(config, self._app_id(location)) as app:
            for cid in targets:
                app.kill_container(records[cid].skein_container)  # KILLED: Skein does not relaunch it
                app.add_container(services[cid])  # the new container claims the freed id
        self._wait_reclaimed(name, {cid: records[cid].yarn_container for cid in targets},
                             float(config["squall.submit.timeout.secs"]))

    def _wait_reclaimed(self, name: str, old: dict, timeout: float) -> None:
        """Wait until a new YARN container holds each id of ``old`` (id -> the YARN container it replaces)."""
        deadline = time.monotonic() + timeout
        while True:
            waiting = []
            for cid, previous in old.items():
                record = self.state.get(Kind.CONTAINER, member(name, cid))
                if record is None or record.yarn_container == previous or not record.processes:
                    waiting.append(cid)
            if not waiting:
                return
            if time.monotonic() > deadline:
                raise SchedulerError(f"topology {name!r}: no new YARN container claimed containers {waiting} "
                                     f"within {timeout:g}s (squall.submit.timeout.secs)")
            time.sleep(0.5)

    def _app_id(self, location: schema.SchedulerLocation) -> str:
        if not location.application_id:
            raise SchedulerError(f"topology {location.topology_name!r}: no YARN application id recorded yet "
                                 "(its containers record it when they start)")
        return location.application_id

    def _new_services(self, execution_state: schema.ExecutionState, proposed: schema.PackingPlan) -> dict[int, str]:
        """container id -> service for every container of ``proposed``: a container keeps its service
        (refused if it outgrew it); a new one goes to the smallest service of the running application
        whose shape holds it (Skein cannot add services to a running application)."""
        name = execution_state.topology_name
        config = self._config(name)
        services = dict(self._location(name).services or {})
        shapes = self._shapes(services, proposed, config)
        out = {0: services[0]}
        for c in sorted(proposed.containers, key=lambda c: c.id):
            memory, vcores = normalise(c.resources, config)
            svc = services.get(c.id)
            if svc is None:
                fits = sorted((shape, s) for s, shape in shapes.items() if shape[0] >= memory and shape[1] >= vcores)
                if not fits:
                    raise SchedulerError(
                        f"new container {c.id} needs {memory} MB and {vcores} vcores; no service of the running "
                        "application is that big and Skein cannot add services: kill and submit the topology "
                        "again, or lower the components' resources")
                svc = fits[0][1]
            elif memory > shapes[svc][0] or vcores > shapes[svc][1]:
                raise SchedulerError(f"container {c.id} would need {memory} MB and {vcores} vcores, more than its "
                                     f"YARN containers ({svc}); kill and submit the topology again")
            out[c.id] = svc
        return out

    @staticmethod
    def _shapes(services: Mapping[int, str], plan: schema.PackingPlan,
                config: Mapping[str, object]) -> dict[str, tuple[int, int]]:
        """service -> (memory MB, vcores) of the running application's container services (the spare
        one included: ``spec.spare_shape``)."""
        shapes = {svc: parse_service(svc) for svc in set(services.values()) if svc != TMASTER_SERVICE}
        spare = spare_shape(plan, config)
        shapes.setdefault(spare.name, (spare.memory_mb, spare.vcores))
        return shapes

    def fit_update(self, execution_state: schema.ExecutionState, topology: schema.Topology, current: schema.PackingPlan, proposed: schema.PackingPlan,
                   base: schema.PackingPlan) -> schema.PackingPlan:
        """A YARN container cannot grow: a container of ``proposed`` that outgrew its service's shape
        moves whole to a new container id, which the update adds to a service that holds it (the spare
        one at the container cap if no other does); the old one retires as a removed one does."""
        name = execution_state.topology_name
        config = self._config(name)
        services = dict(self._location(name).services or {})
        shapes = self._shapes(services, proposed, config)
        next_id = max([c.id for c in current.containers] + [c.id for c in proposed.containers]) + 1
        moves = {}
        for c in sorted(proposed.containers, key=lambda c: c.id):
            svc = services.get(c.id)
            if svc is None:
                continue
            memory, vcores = normalise(c.resources, config)
            if memory > shapes[svc][0] or vcores > shapes[svc][1]:
                moves[c.id] = next_id
                next_id += 1
        if not moves:
            return proposed
        log.info("containers %s outgrew their YARN containers: they move to %s", sorted(moves),
                 [moves[c] for c in sorted(moves)])
        return renumber_containers(topology, proposed, moves, base)

    def check_update(self, execution_state: schema.ExecutionState, current: schema.PackingPlan, proposed: schema.PackingPlan) -> None:
        self._new_services(execution_state, proposed)
        config = self._config(execution_state.topology_name)
        known = {c.id for c in current.containers}
        added = [normalise(c.resources, config) for c in proposed.containers if c.id not in known]
        if not added:
            return
        try:
            free = self.headroom(execution_state)
        except YarnError as e:
            log.warning("the queue's headroom is unknown, the update goes ahead: %s", e)
            return
        need = (sum(mb for mb, _ in added), sum(vcores for _, vcores in added))
        if free is not None and (need[0] > free[0] or need[1] > free[1]):
            raise SchedulerError(f"the update needs {len(added)} more YARN container(s), {need[0]} MB and {need[1]} "
                                 f"vcores, and queue {config['squall.yarn.queue']!r} can be granted {free[0]} MB "
                                 f"and {free[1]} vcores now (ResourceManager): nothing changed")

    def headroom(self, execution_state: schema.ExecutionState) -> Optional[tuple[int, int]]:
        config = self._config(execution_state.topology_name)
        rm = rm_client(config)
        if rm is None:
            return None
        queue = find_queue(rm.queues(), config["squall.yarn.queue"])
        return queue_headroom(queue, rm.metrics()) if queue is not None else None

    def on_update(self, execution_state: schema.ExecutionState, current: schema.PackingPlan, proposed: schema.PackingPlan) -> None:
        name = execution_state.topology_name
        location = self._location(name)
        services = self._new_services(execution_state, proposed)
        added = sorted(set(services) - set(location.services or {}))
        location.services = services
        self.state.put(Kind.SCHEDULER, name, location)
        if not added:
            return  # removed containers retire and exit cleanly by themselves
        with application(self._config(name), self._app_id(location)) as app:
            for cid in added:
                app.add_container(services[cid])

    def details(self, execution_state: schema.ExecutionState) -> dict[str, str]:
        name = execution_state.topology_name
        location = self.state.get(Kind.SCHEDULER, name)
        app_id = location.application_id if location is not None else None
        out = {"YARN application": app_id or "(not started yet: its containers record it when they start)"}
        if app_id:
            rm = rm_client(self._config(name))
            if rm is not None:
                try:
                    report = rm.app(app_id)
                    out["state"] = report.state
                    out["tracking URL"] = report.tracking_url
                except YarnError as e:
                    out["tracking URL"] = f"unknown ({e})"
            out["logs"] = (f"each container's log folder on its host (squall logs {name}); "
                           f"once the application has ended: yarn logs -applicationId {app_id}")
        return out


    def cluster(self, config: Mapping[str, object]) -> Optional[dict[str, object]]:
        """``squall cluster --json``: the ResourceManager's nodes, queues and applications, and where Squall's
        containers are (None without a ResourceManager address; a YarnError when it does not answer)."""
        from squall.yarn.view import fetch_view, squall_containers, view_json

        rm = rm_client(config)
        if rm is None:
            return None
        return view_json(fetch_view(rm, squall_containers(self.state), config))


def state_file_of(run_dir: str) -> str:
    return os.path.join(run_dir, "state.json")


def _remember(run_dir: str, app_id: str) -> None:
    """Keep the application id in the run folder, for ``yarn logs`` after the state is gone."""
    try:
        os.makedirs(staging_dir(run_dir), exist_ok=True)
        with open(os.path.join(staging_dir(run_dir), "application_id"), "w") as f:
            f.write(app_id + "\n")
    except OSError as e:
        log.warning("cannot record the application id in %s: %s", run_dir, e)
