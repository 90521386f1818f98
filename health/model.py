"""What the health manager's parts hand each other: an observation of the running topology, and
decisions with their evidence.

Pure data, JSON-able (``to_json``/``from_json``) so the decision history survives a topology master
failover in the state manager and is shown as it was decided by the CLI, the REST API and the UI.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Mapping, Optional, Sequence

MODES = ("off", "recommend", "auto")


@dataclass(frozen=True)
class TaskObservation:
    """One task over the last window (rates per second; None before it handled a tuple)."""

    task_id: int
    container: int
    execute_rate: float
    emit_rate: float
    busy: Optional[float]  # time in process() (spouts: next_tuple() that emitted) / time covered
    queue_depth: int
    queue_depth_max: int
    backpressure_ms: float  # ms throttled by backpressure in the window
    execute_latency_ms: Optional[float]
    cpu_percent: Optional[float]  # % of one core
    rss_mb: Optional[float]
    pending: Optional[int] = None  # a reliable spout task's trees open at the end of its last bucket


@dataclass(frozen=True)
class ComponentObservation:
    name: str
    kind: str  # "spout" | "bolt"
    parallelism: int
    cpu_requested: float  # per instance
    ram_mb_requested: float  # per instance
    chain: Optional[tuple]  # the chain it runs in (head to tail), None unchained
    tasks: Mapping[int, TaskObservation]
    complete_latency_p99_ms: Optional[float] = None  # spouts, at least once
    source_lag: Optional[int] = None  # records behind, summed over its partitions (source spouts)
    grouping: Optional[str] = None  # its inputs' grouping ("FIELDS", "SHUFFLE", ...; "mixed" when they differ)
    stateful: bool = False  # a stateful component: a hot key's task holds hot key groups


@dataclass(frozen=True)
class Observation:
    """The topology as the sensors saw it at ``time``, over the last ``window_secs``."""

    time: float
    window_secs: float
    topology: str
    status: str  # the execution state's status: "running", "degraded", ...
    busy_elsewhere: bool  # restoring, checkpointing a rescale, or an update in flight: no action now
    reliability: str  # topology.reliability.mode
    max_spout_pending: Optional[int]
    containers: int
    components: Mapping[str, ComponentObservation]
    headroom: Optional[tuple] = None  # (memory MB, vcores) the cluster can still grant (YARN: the queue's)
    hot_keys: Mapping[str, list] = field(default_factory=dict)  # component -> sampled hot keys (health/hot_keys.py)


@dataclass(frozen=True)
class Action:
    """What a resolution changes. ``kind``:

    - ``scale``: ``component`` to ``parallelism`` (with ``cpu`` / ``ram_mb`` per instance when it is
      right-sized in the same update);
    - ``resize``: ``component``'s ``cpu`` / ``ram_mb`` per instance (right-sizing);
    - ``restart_task``: ``task_id``; ``move_container``: ``container`` (a slow instance);
    - ``set_pending``: ``topology.max.spout.pending`` to ``pending``;
    - ``split_chain``: ``component`` starts a chain of its own (``squall.chaining: head``);
    - ``none``: report only (skew: the hot keys are in the evidence).
    """

    kind: str
    component: Optional[str] = None
    parallelism: Optional[int] = None
    cpu: Optional[float] = None
    ram_mb: Optional[float] = None
    task_id: Optional[int] = None
    container: Optional[int] = None
    pending: Optional[int] = None


@dataclass(frozen=True)
class Decision:
    """One diagnosis and its resolution, with the figures, the formula and the expected effect.

    ``status``: ``recommended`` (shown, not applied), ``applied``, ``effective`` / ``ineffective``
    (measured against ``expected`` after the stabilization time), ``blocked`` (a safety rule held it:
    ``reason`` says which), ``failed`` (the update was refused: ``reason``).
    """

    id: str
    time: float
    # under_provisioned | over_provisioned | slow_instance | skew | pending | pending_revert | chain_bottleneck
    diagnosis: str
    component: Optional[str]
    summary: str  # one line an operator reads first: what to change and why
    evidence: Mapping[str, object]  # the figures the diagnosis used
    formula: str  # how the resolution was computed, with the figures in it
    action: Action
    expected: Mapping[str, object]  # the predicted effect (e.g. {"input_rate": 3000, "containers": 2})
    status: str = "recommended"
    reason: str = ""
    cost: Mapping[str, float] = field(default_factory=dict)  # {"cpu": +1.0, "ram_mb": +512, "containers": +1}
    applied_time: Optional[float] = None  # when the body applied it: its effect is measured stabilization later

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> "Decision":
        fields = dict(data)
        fields["action"] = Action(**dict(fields["action"]))  # type: ignore[arg-type]
        return cls(**fields)  # type: ignore[arg-type]


def latest(history: Sequence[Decision], status: str) -> Optional[Decision]:
    """The newest decision of ``history`` with ``status``."""
    return next((d for d in reversed(history) if d.status == status), None)
