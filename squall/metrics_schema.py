"""The metrics row of ``docs/metrics.md``, defined once: its columns and the reserved keys of its ``user``.

The runtime writes rows (the metrics manager's file sink, each process's
``user`` figures), the topology master's metrics store and the UI read them
back, the reports validate and aggregate the files: all of them name the
columns and the keys from here. A reserved key begins with ``__``, so that
it never meets a user metric's name; its spelling is the one the files and
docs/metrics.md carry.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Optional

ColumnType = Literal["float", "int", "str", "object"]


@dataclass(frozen=True)
class Field:
    """A column of the metrics row; the bounds hold when its value is not null."""

    name: str
    type: ColumnType
    nullable: bool = False
    min: Optional[float] = None  # inclusive lower bound
    positive: bool = False  # strictly greater than zero


FIELDS: tuple[Field, ...] = (
    Field("ts", "float"),
    Field("interval_secs", "float", positive=True),
    Field("topology", "str"),
    Field("run_id", "str"),
    Field("container", "int", min=0),
    Field("host", "str"),
    Field("process", "str"),
    Field("component", "str"),
    Field("task_id", "int", nullable=True, min=0),
    Field("emit_count", "int", min=0),
    Field("execute_count", "int", min=0),
    Field("ack_count", "int", min=0),
    Field("fail_count", "int", min=0),
    Field("execute_latency_ms", "float", nullable=True, min=0),
    Field("process_latency_ms", "float", nullable=True, min=0),
    Field("complete_latency_ms", "float", nullable=True, min=0),
    Field("queue_depth", "int", min=0),
    Field("backpressure_ms", "float", min=0),
    Field("cpu_percent", "float", min=0),
    Field("rss_mb", "float", min=0),
    Field("threads", "int", min=0),
    Field("cpu_requested", "float", nullable=True, min=0),
    Field("ram_requested_mb", "int", nullable=True, min=0),
    Field("user", "object"),
)

#: the row's keys, in the order a metrics file line has them
FIELD_NAMES: tuple[str, ...] = tuple(f.name for f in FIELDS)

#: the processes that report rows (the ``process`` column)
PROCESSES = ("instance", "stmgr", "metricsmgr", "tmaster", "health")

# the ``component`` of a daemon's row (a topology's own components cannot start with "__")
STMGR_COMPONENT = "__stmgr"
METRICSMGR_COMPONENT = "__metricsmgr"
TMASTER_COMPONENT = "__tmaster"
HEALTH_COMPONENT = "__health"

# reserved keys of an instance row's ``user`` (docs/metrics.md)
ERRORS = "__errors"  # the bucket's kept errors raised in user code: [{"time", "where", "error", "traceback"}]
ERROR_COUNT = "__error-count"  # every error of the bucket, kept or not
TIMEOUT_COUNT = "__timeout-count"  # a reliable spout's trees timed out in the bucket
PENDING = "__pending"  # a reliable spout's trees open at the bucket's end
CHAIN = "__chain"  # a chained task's share of its process: {"members": n, "share": s}
SOURCE_PARTITIONS = "__source-partitions"  # a source spout's partitions (squall.metrics.SourcePartitions)
CHECKPOINT_SAVES = "__checkpoint_saves"  # checkpoints the task saved
CHECKPOINT_SAVE_MS = "__checkpoint_save_ms"  # summed over those saves
CHECKPOINT_ALIGN_MS = "__checkpoint_align_ms"  # the longest alignment among them
CHECKPOINT_BYTES = "__checkpoint_bytes"  # state bytes written, summed over those saves
CHECKPOINT_STALE_FRAMES = "__checkpoint_stale_frames"  # frames of an older epoch dropped
# reserved key of the health manager's row's ``user``: {"<action kind>/<status>": decisions that reached it}
HEALTH_ACTIONS = "__health-actions"

RESERVED_KEYS = frozenset({ERRORS, ERROR_COUNT, TIMEOUT_COUNT, PENDING, CHAIN, SOURCE_PARTITIONS, CHECKPOINT_SAVES,
                           CHECKPOINT_SAVE_MS, CHECKPOINT_ALIGN_MS, CHECKPOINT_BYTES, CHECKPOINT_STALE_FRAMES,
                           HEALTH_ACTIONS})


def carries(user_json: str, key: str) -> bool:
    """Whether a row's ``user`` JSON text may hold ``key``: the cheap test before it is parsed."""
    return f'"{key}"' in user_json
