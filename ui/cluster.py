"""The cluster page's data: the topologies and their containers, and on YARN the cluster itself.

The YARN part is the YARN scheduler's (``Scheduler.cluster``: nodes, who
holds their resources, resource pools, queues), asked only when the
configuration names a ResourceManager; it is what ``squall cluster --json``
prints.
"""
from __future__ import annotations

from typing import Mapping

from squall.errors import SquallError
from squall.scheduler import launcher
from squall.scheduler.views import list_data
from squall.state import StateManager


def cluster(state: StateManager, config: Mapping[str, object]) -> dict:
    rows = list_data(state)
    hosts: dict = {}
    containers = 0
    for row in rows:
        for record in state.container_records(row["name"]):
            containers += 1
            h = hosts.setdefault(record.host, {"host": record.host, "containers": 0, "processes": 0,
                                               "topologies": set()})
            h["containers"] += 1
            h["processes"] += len(record.processes)
            h["topologies"].add(row["name"])
    try:
        yarn = launcher.make_scheduler("yarn", state).cluster(config)
    except launcher.SubmitError:
        yarn = None  # Squall was installed without its YARN extra: there is no YARN to show
    except SquallError as e:
        yarn = {"error": str(e)}
    return {
        "topologies": [{k: r[k] for k in ("name", "status", "cluster", "containers", "instances")} for r in rows],
        "containers": containers,
        "instances": sum(r["instances"] for r in rows),
        "hosts": [{**h, "topologies": sorted(h["topologies"])} for _, h in sorted(hosts.items())],
        "yarn": yarn,
    }
