"""The ResourceManager's REST API (``/ws/v1/cluster/...``): fetched with a deadline, parsed into values.

The ``parse_*`` functions take the JSON documents exactly as Hadoop's
ResourceManager REST documentation shows them and are pure; ``RMClient``
fetches them, trying each ResourceManager of an HA pair in turn.
"""
from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Optional

from squall.yarn.errors import YarnError
from squall.yarn.hadoop import queue_path

SQUALL_TAG = "squall"


@dataclass(frozen=True)
class ClusterMetrics:
    total_mb: int
    allocated_mb: int
    available_mb: int
    total_vcores: int
    allocated_vcores: int
    available_vcores: int
    active_nodes: int
    apps_running: int


@dataclass(frozen=True)
class NodeReport:
    id: str
    host: str
    rack: str
    state: str
    containers: int
    used_mb: int
    available_mb: int
    used_vcores: int
    available_vcores: int
    labels: tuple = ()
    measured_cpu: Optional[float] = None  # busy vcores on the node (nodeCPUUsage), everything on it
    measured_mb: Optional[float] = None  # physical memory in use on the node

    @property
    def capacity_mb(self) -> int:
        return self.used_mb + self.available_mb

    @property
    def capacity_vcores(self) -> int:
        return self.used_vcores + self.available_vcores


@dataclass(frozen=True)
class QueueReport:
    name: str  # full path, root.a.b
    capacity: float  # percent of the parent (capacity scheduler); of the cluster for fair (from fairResources)
    used_capacity: float  # percent of its own capacity
    max_capacity: float
    absolute_capacity: float  # percent of the cluster
    absolute_used: float
    used_mb: int
    used_vcores: int
    kind: str  # capacityScheduler | fairScheduler
    children: tuple = field(default_factory=tuple)  # names
    absolute_max_capacity: float = 100.0  # percent of the cluster the queue may grow to (elastic limit)


@dataclass(frozen=True)
class AppReport:
    id: str
    name: str
    queue: str
    state: str
    type: str  # applicationType: SPARK, skein, MAPREDUCE, ...
    tags: tuple
    allocated_mb: int
    allocated_vcores: int
    containers: int
    tracking_url: str

    @property
    def owner(self) -> str:
        """Who the resources are allocated to: squall (tagged by Squall), spark, or other."""
        if SQUALL_TAG in self.tags:
            return "squall"
        if self.type.upper() == "SPARK":
            return "spark"
        return "other"


def _int(value: object) -> int:
    return int(value or 0)


def parse_metrics(doc: dict) -> ClusterMetrics:
    m = doc["clusterMetrics"]
    return ClusterMetrics(_int(m.get("totalMB")), _int(m.get("allocatedMB")), _int(m.get("availableMB")),
                          _int(m.get("totalVirtualCores")), _int(m.get("allocatedVirtualCores")),
                          _int(m.get("availableVirtualCores")), _int(m.get("activeNodes")),
                          _int(m.get("appsRunning")))


def parse_nodes(doc: dict) -> list:
    nodes = (doc.get("nodes") or {}).get("node") or []
    out = []
    for n in nodes:
        util = n.get("resourceUtilization") or {}
        out.append(NodeReport(
            id=n["id"], host=n.get("nodeHostName") or n["id"].rsplit(":", 1)[0], rack=n.get("rack", ""),
            state=n.get("state", ""), containers=_int(n.get("numContainers")),
            used_mb=_int(n.get("usedMemoryMB")), available_mb=_int(n.get("availMemoryMB")),
            used_vcores=_int(n.get("usedVirtualCores")), available_vcores=_int(n.get("availableVirtualCores")),
            labels=tuple(n.get("nodeLabels") or ()),
            measured_cpu=float(util["nodeCPUUsage"]) if "nodeCPUUsage" in util else None,
            measured_mb=float(util["nodePhysicalMemoryMB"]) if "nodePhysicalMemoryMB" in util else None,
        ))
    return sorted(out, key=lambda n: n.host)


def parse_scheduler(doc: dict) -> list:
    """Every queue, depth first, for the capacity and the fair scheduler."""
    info = doc["scheduler"]["schedulerInfo"]
    kind = info.get("type", "")
    out: list = []
    if kind == "capacityScheduler":
        root = {"queueName": "root", "capacity": info.get("capacity", 100), "usedCapacity": info.get("usedCapacity", 0),
                "maxCapacity": info.get("maxCapacity", 100), "absoluteCapacity": 100,
                "absoluteUsedCapacity": info.get("usedCapacity", 0), "queues": info.get("queues")}
        _capacity_queue(root, "", out)
    elif kind == "fairScheduler":
        _fair_queue(info["rootQueue"], out)
    else:
        raise YarnError(f"ResourceManager scheduler {kind!r}: Squall reads the capacity and fair schedulers only")
    return out


def _capacity_queue(q: dict, parent: str, out: list) -> None:
    name = f"{parent}.{q['queueName']}" if parent else q["queueName"]
    children = ((q.get("queues") or {}).get("queue")) or []
    used = q.get("resourcesUsed") or {}
    out.append(QueueReport(name, float(q.get("capacity", 0)), float(q.get("usedCapacity", 0)),
                           float(q.get("maxCapacity", 0)), float(q.get("absoluteCapacity", 0)),
                           float(q.get("absoluteUsedCapacity", 0)), _int(used.get("memory")),
                           _int(used.get("vCores")), "capacityScheduler",
                           tuple(f"{name}.{c['queueName']}" for c in children),
                           float(q.get("absoluteMaxCapacity", q.get("maxCapacity", 100.0)))))
    for child in children:
        _capacity_queue(child, name, out)


def _fair_queue(q: dict, out: list, cluster_mb: Optional[int] = None) -> None:
    used = q.get("usedResources") or {}
    fair = q.get("fairResources") or {}
    top = q.get("maxResources") or {}
    cluster_mb = cluster_mb or _int((q.get("clusterResources") or {}).get("memory")) or _int(top.get("memory"))
    children = ((q.get("childQueues") or {}).get("queue")) or []
    def share(amount: object) -> float:
        return 100.0 * _int(amount) / cluster_mb if cluster_mb else 0.0
    out.append(QueueReport(q["queueName"], share(fair.get("memory")),
                           100.0 * _int(used.get("memory")) / _int(fair.get("memory")) if _int(fair.get("memory")) else 0.0,
                           share(top.get("memory")), share(fair.get("memory")), share(used.get("memory")),
                           _int(used.get("memory")), _int(used.get("vCores")), "fairScheduler",
                           tuple(c["queueName"] for c in children),
                           share(top.get("memory")) if top.get("memory") else 100.0))
    for child in children:
        _fair_queue(child, out, cluster_mb)


def find_queue(queues: list, queue: str) -> Optional[QueueReport]:
    """The report of ``queue`` as an application names it: a full path (``root.a.b``, ``a.b``) or a leaf
    name (unique under the capacity scheduler)."""
    full = queue_path(queue)
    return (next((q for q in queues if q.name == full), None)
            or next((q for q in queues if q.name.rsplit(".", 1)[-1] == queue), None))


def queue_headroom(queue: QueueReport, cluster: ClusterMetrics) -> tuple[int, int]:
    """``(memory MB, vcores)`` the queue can still be granted now: what it may grow to (its maximum
    capacity, a share of the cluster) less what it uses, and no more than the cluster has free."""
    share = queue.absolute_max_capacity / 100.0
    mb = min(cluster.available_mb, int(cluster.total_mb * share) - queue.used_mb)
    vcores = min(cluster.available_vcores, int(cluster.total_vcores * share) - queue.used_vcores)
    return max(0, mb), max(0, vcores)


def parse_apps(doc: dict) -> list:
    apps = (doc.get("apps") or {}).get("app") or []
    return [AppReport(a["id"], a.get("name", ""), a.get("queue", ""), a.get("state", ""),
                      a.get("applicationType", ""),
                      tuple(t.strip() for t in (a.get("applicationTags") or "").split(",") if t.strip()),
                      _int(a.get("allocatedMB")), _int(a.get("allocatedVCores")),
                      _int(a.get("runningContainers")), a.get("trackingUrl") or "")
            for a in apps]


class RMClient:
    """GETs ``/ws/v1/cluster/...`` from the first ResourceManager of ``urls`` that answers."""

    def __init__(self, urls: list, timeout: float):
        if not urls:
            raise YarnError("no ResourceManager address: set squall.yarn.rm.url or HADOOP_CONF_DIR")
        self.urls = [u.rstrip("/") for u in urls]
        self.timeout = timeout

    def get(self, path: str) -> dict:
        errors = []
        for base in self.urls:
            url = f"{base}/ws/v1/cluster/{path}"
            try:
                request = urllib.request.Request(url, headers={"Accept": "application/json"})
                with urllib.request.urlopen(request, timeout=self.timeout) as response:
                    return json.load(response)
            except urllib.error.HTTPError as e:
                errors.append(f"{url}: HTTP {e.code} {e.reason}")
            except (urllib.error.URLError, OSError, ValueError) as e:
                errors.append(f"{url}: {getattr(e, 'reason', e)}")
        raise YarnError(f"the ResourceManager did not answer within {self.timeout:g}s "
                        f"(squall.yarn.connect.timeout.secs): {'; '.join(errors)}")

    def metrics(self) -> ClusterMetrics:
        return parse_metrics(self.get("metrics"))

    def nodes(self) -> list:
        return parse_nodes(self.get("nodes"))

    def queues(self) -> list:
        return parse_scheduler(self.get("scheduler"))

    def apps(self, states: str = "RUNNING") -> list:
        return parse_apps(self.get(f"apps?states={states}"))

    def app(self, app_id: str) -> AppReport:
        return parse_apps({"apps": {"app": [self.get(f"apps/{app_id}")["app"]]}})[0]
