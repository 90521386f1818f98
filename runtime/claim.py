"""Container identity on YARN: an executor claims a free container id of its Skein service.

YARN and Skein number containers their own way and renumber them on every
relaunch (a new instance number, a new YARN container id), so neither can say
which ContainerPlan a container runs. The scheduler record
(``schedulers/<topology>``) maps each container id to the Skein service whose
containers may run it; an executor started with ``--service S`` takes the
first id of S that no live executor holds by creating its ephemeral container
record (``containers/<topology>/<id>``) before anything else. A relaunched
container finds its predecessor's id free once that record is gone (at once
when the predecessor exited, a ZooKeeper session timeout after it was killed)
and claims it.
"""
from __future__ import annotations

import logging
import os
import socket
import time
from typing import Optional

from squall.idl import schema
from squall.state import AlreadyExists, Kind, StateError, StateManager, member

log = logging.getLogger(__name__)

# Environment variables YARN's NodeManager and Skein set in a service container.
YARN_CONTAINER_ENV = "CONTAINER_ID"
SKEIN_CONTAINER_ENV = "SKEIN_CONTAINER_ID"
SKEIN_APPLICATION_ENV = "SKEIN_APPLICATION_ID"


def claimable(state: StateManager, topology: str, service: str) -> list:
    """Container ids of ``service`` in the current packing plan, in claiming order."""
    location = state.get(Kind.SCHEDULER, topology)
    plan = state.get(Kind.PACKING_PLAN, topology)
    if location is None or plan is None:
        return []
    in_plan = {0} | {c.id for c in plan.containers}
    return sorted(cid for cid, s in (location.services or {}).items() if s == service and cid in in_plan)


def empty_status(container: int) -> schema.ContainerStatus:
    """The record a claim creates: this executor, no process yet."""
    return schema.ContainerStatus(container=container, host=socket.gethostname(), executor_pid=os.getpid(),
                                  updated=time.time(), processes=[],
                                  yarn_container=os.environ.get(YARN_CONTAINER_ENV),
                                  skein_container=os.environ.get(SKEIN_CONTAINER_ENV))


def try_claim(state: StateManager, topology: str, service: str) -> Optional[int]:
    """Claim the first free id of ``service`` now; None when every one is held."""
    for cid in claimable(state, topology, service):
        try:
            state.create(Kind.CONTAINER, member(topology, cid), empty_status(cid))
        except AlreadyExists:
            continue
        return cid
    return None


def claim(state: StateManager, topology: str, service: str, wait: float, poll: float = 0.2) -> Optional[int]:
    """Claim a free id of ``service``, waiting up to ``wait`` seconds for one to be freed.

    A relaunched container usually starts while the record of the container it
    replaces still exists (a killed process's ZooKeeper session lives on for a
    session timeout), so ``wait`` should exceed that timeout. None after
    ``wait``: this container is surplus (its service has more containers than
    ids, e.g. after a scale-down), and the caller exits cleanly so that
    Skein does not relaunch it.
    """
    deadline = time.monotonic() + wait
    while True:
        cid = try_claim(state, topology, service)
        if cid is not None:
            log.info("claimed container %d of service %s", cid, service)
            return cid
        if time.monotonic() >= deadline:
            return None
        time.sleep(poll)


def record_application(state: StateManager, topology: str) -> None:
    """Write the YARN application id (``SKEIN_APPLICATION_ID``) into the scheduler record if it lacks it.

    With ``--spec-out`` an operator submits the application through their own
    tooling, so only the containers learn its id. Every executor writes the
    same value, once, while the record is otherwise unchanged (at start).
    """
    app_id = os.environ.get(SKEIN_APPLICATION_ENV)
    if not app_id:
        return
    try:
        location = state.get(Kind.SCHEDULER, topology)
        if location is not None and location.application_id != app_id:
            location.application_id = app_id
            state.put(Kind.SCHEDULER, topology, location)
    except StateError as e:
        log.warning("cannot record application %s in the scheduler record: %s", app_id, e)
