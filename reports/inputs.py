"""Finding and checking the reports' inputs: metrics files, packing plans,
cluster views and targets. Every problem is a SquallError naming the input."""
from __future__ import annotations

import glob
import json
import os
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, Optional, Sequence

from squall.errors import SquallError

if TYPE_CHECKING:  # pyspark is an extra (squall[reports]): imported where a session starts
    from pyspark.sql import SparkSession

_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


@dataclass(frozen=True)
class MetricsSource:
    """What Spark reads: local files (listed) or one URI handed to Spark as is."""

    paths: tuple
    plan_candidates: tuple  # packing_plan.json files, one per run folder found
    is_uri: bool = False


def find_metrics(path: str) -> MetricsSource:
    """Locate metrics files under ``path``: a ``.jsonl`` file, a ``metrics/``
    folder, a run folder, a topology folder with runs, or a glob. A URI
    (``hdfs://...``) goes to Spark unchanged, with its run's ``packing_plan.json``."""
    if _URI.match(path) and not path.startswith("file://"):
        base = path.rstrip("/")
        run_dir = base[: -len("/metrics")] if base.endswith("/metrics") else base
        return MetricsSource((path,), (run_dir + "/packing_plan.json",), is_uri=True)
    local = path[len("file://"):] if path.startswith("file://") else path
    local = os.path.expanduser(local)
    if glob.has_magic(local):
        matches = sorted(glob.glob(local, recursive=True))
    elif os.path.isfile(local):
        matches = [local]
    elif os.path.isdir(local):
        matches = sorted(glob.glob(os.path.join(local, "**", "*.jsonl"), recursive=True))
    else:
        raise SquallError(f"metrics path {path} does not exist")
    files = [os.path.abspath(m) for m in matches if os.path.isfile(m)]
    if not files:
        raise SquallError(f"no metrics files (*.jsonl) under {path}")
    plans = []
    for folder in sorted({os.path.dirname(f) for f in files}):
        run_dir = os.path.dirname(folder) if os.path.basename(folder) == "metrics" else folder
        candidate = os.path.join(run_dir, "packing_plan.json")
        if os.path.isfile(candidate) and candidate not in plans:
            plans.append(candidate)
    return MetricsSource(tuple(files), tuple(plans))


def read_text(spark: "SparkSession", path: str) -> Optional[str]:
    """A small file's text: locally with open(), through Spark for a URI; None if absent."""
    if not _URI.match(path) or path.startswith("file://"):
        local = path[len("file://"):] if path.startswith("file://") else path
        if not os.path.isfile(local):
            return None
        with open(local) as f:
            return f.read()
    try:
        rows = spark.read.text(path, wholetext=True).collect()
    except Exception:  # Spark raises AnalysisException (and others) for a missing path
        return None
    return rows[0][0] if rows else None


def load_packing_plan(text: str, where: str) -> dict:
    """Parse and check a packing plan in the shape of ``squall pack --json``."""
    try:
        plan = json.loads(text)
    except ValueError as e:
        raise SquallError(f"packing plan {where} is not valid JSON: {e}") from e
    if not isinstance(plan, Mapping) or not isinstance(plan.get("containers"), list):
        raise SquallError(f"packing plan {where}: expected an object with a 'containers' list")
    for i, container in enumerate(plan["containers"]):
        at = f"packing plan {where}: containers[{i}]"
        if not isinstance(container, Mapping) or not isinstance(container.get("instances"), list):
            raise SquallError(f"{at}: expected an object with an 'instances' list")
        _resources(container.get("resources"), f"{at}.resources")
        for j, instance in enumerate(container["instances"]):
            if not isinstance(instance, Mapping) or not isinstance(instance.get("component"), str):
                raise SquallError(f"{at}.instances[{j}]: expected an object with a 'component' name")
            _resources(instance.get("resources"), f"{at}.instances[{j}].resources")
    return dict(plan)


def _resources(value: Any, at: str) -> None:
    if not isinstance(value, Mapping):
        raise SquallError(f"{at}: expected an object with cpu, ram_mb, disk_mb")
    for key in ("cpu", "ram_mb"):
        v = value.get(key)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
            raise SquallError(f"{at}.{key}: expected a number >= 0, got {v!r}")


# ---------------------------------------------------------------- cluster view


@dataclass(frozen=True)
class Capacity:
    vcores: float
    memory_mb: float


@dataclass(frozen=True)
class Node:
    host: str
    capacity: Capacity
    used: Capacity

    @property
    def free(self) -> Capacity:
        return Capacity(self.capacity.vcores - self.used.vcores, self.capacity.memory_mb - self.used.memory_mb)


@dataclass(frozen=True)
class ClusterView:
    queue_name: str
    queue_capacity: Capacity
    queue_used: Capacity
    nodes: tuple

    @property
    def queue_free(self) -> Capacity:
        return Capacity(
            self.queue_capacity.vcores - self.queue_used.vcores,
            self.queue_capacity.memory_mb - self.queue_used.memory_mb,
        )


def load_cluster_view(path: str) -> ClusterView:
    """Read ``--cluster-view FILE`` (schema in docs/reports.md)."""
    try:
        with open(os.path.expanduser(path)) as f:
            data = json.load(f)
    except OSError as e:
        raise SquallError(f"cannot read cluster view {path}: {e.strerror}") from e
    except ValueError as e:
        raise SquallError(f"cluster view {path} is not valid JSON: {e}") from e
    return parse_cluster_view(data, path)


def parse_cluster_view(data: Any, where: str = "cluster view") -> ClusterView:
    if not isinstance(data, Mapping):
        raise SquallError(f"{where}: expected a JSON object with 'queue' and 'nodes'")
    unknown = sorted(set(data) - {"queue", "nodes", "source", "time"})
    if unknown:
        raise SquallError(f"{where}: unknown keys {', '.join(unknown)} (expected queue, nodes, source, time)")
    queue = data.get("queue")
    if not isinstance(queue, Mapping):
        raise SquallError(f"{where}: queue: expected an object with name, capacity and used")
    nodes = data.get("nodes")
    if not isinstance(nodes, list):
        raise SquallError(f"{where}: nodes: expected a list")
    parsed = []
    for i, node in enumerate(nodes):
        if not isinstance(node, Mapping) or not isinstance(node.get("host"), str):
            raise SquallError(f"{where}: nodes[{i}].host: expected a host name")
        capacity = _capacity(node.get("capacity"), f"{where}: nodes[{i}].capacity")
        used = _capacity(node.get("used", {"vcores": 0, "memory_mb": 0}), f"{where}: nodes[{i}].used")
        parsed.append(Node(node["host"], capacity, used))
    return ClusterView(
        queue_name=str(queue.get("name", "default")),
        queue_capacity=_capacity(queue.get("capacity"), f"{where}: queue.capacity"),
        queue_used=_capacity(queue.get("used", {"vcores": 0, "memory_mb": 0}), f"{where}: queue.used"),
        nodes=tuple(parsed),
    )


def _capacity(value: Any, at: str) -> Capacity:
    if not isinstance(value, Mapping):
        raise SquallError(f"{at}: expected an object with vcores and memory_mb")
    out = []
    for key in ("vcores", "memory_mb"):
        v = value.get(key)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
            raise SquallError(f"{at}.{key}: expected a number >= 0, got {v!r}")
        out.append(float(v))
    return Capacity(*out)


# --------------------------------------------------------------------- targets


@dataclass(frozen=True)
class Targets:
    """``--target-rate``: a topology input rate and/or per-component rates (tuples/s)."""

    topology_rate: Optional[float] = None
    components: tuple = ()  # (component, rate)

    def for_component(self, name: str) -> Optional[float]:
        for component, rate in self.components:
            if component == name:
                return rate
        return None


def parse_targets(texts: Sequence[str]) -> Targets:
    """``["10000"]`` (topology input rate) or ``["count=10000", ...]`` (per component)."""
    topology_rate, components = None, []
    for text in texts or ():
        name, sep, raw = text.rpartition("=")
        try:
            rate = float(raw)
        except ValueError:
            raise SquallError(f"--target-rate {text!r}: expected TUPLES_PER_S or COMPONENT=TUPLES_PER_S") from None
        if not rate > 0:
            raise SquallError(f"--target-rate {text!r}: the rate must be > 0")
        if sep:
            components.append((name, rate))
        else:
            topology_rate = rate
    return Targets(topology_rate, tuple(components))
