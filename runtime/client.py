"""What the CLI uses to talk to a running topology's master, and what a process outside runtime/ (the
health manager) reports its metrics rows with."""
from __future__ import annotations

import logging
from typing import Optional, Sequence

from squall.errors import SquallError
from squall.idl import schema
from squall.runtime.checkpoints import checkpoint_figures, describe_checkpoints
from squall.runtime.metrics_sender import CONNECT_TIMEOUT_SECS, MetricsBacklog
from squall.runtime.protocol import BlockingConnection, ProtocolError, control_frame, decode_control
from squall.state import StateManager

__all__ = ["MetricsReporter", "TMasterUnreachable", "describe_checkpoints", "query_metrics"]

log = logging.getLogger(__name__)


class TMasterUnreachable(SquallError):
    """The topology master of a topology cannot be reached or did not answer."""


# MetricsSummary fields, in the order they are shown (runtime/metrics_store.py says what each is)
FIELDS = ("emitted", "executed", "acked", "failed", "emit_rate", "execute_rate", "ack_rate", "fail_rate",
          "execute_latency_ms", "process_latency_ms", "window_secs", "execute_latency_p50_ms",
          "execute_latency_p99_ms", "process_latency_p50_ms", "process_latency_p99_ms", "complete_latency_ms",
          "complete_latency_p50_ms", "complete_latency_p99_ms", "capacity", "queue_depth", "queue_depth_max",
          "backpressure_ms", "cpu_percent", "rss_mb", "error_count", "pending")
SOURCE_FIELDS = ("component", "task_id", "partition", "lag", "records_per_sec", "bytes_per_sec", "ts")
POINT_FIELDS = ("ts", "secs", "emitted", "executed", "acked", "failed", "execute_latency_ms",
                "process_latency_ms", "complete_latency_ms", "backpressure_ms")


def _summary(s: schema.MetricsSummary) -> dict:
    out = {name: getattr(s, name) for name in FIELDS}
    out["errors"] = [{"time": e.time, "where": e.where, "error": e.error, "traceback": e.traceback}
                     for e in s.errors or []]
    return out


def query_metrics(state_manager: StateManager, topology_name: str, timeout: float = 5.0,
                  component: Optional[str] = None, window_secs: Optional[float] = None,
                  series: bool = False, task_ids: Optional[Sequence[int]] = None) -> dict:
    """Metrics of a running topology from its topology master.

    Returns ``{"components": {name: {...}}, "tasks": {task_id: {"component": name, ...}}}``
    where each entry has ``emitted, executed, acked, failed`` (totals since
    start), ``emit_rate, execute_rate, ack_rate, fail_rate`` (per second over
    the last bucket) and ``execute_latency_ms, process_latency_ms`` (means, or
    None before any tuple), and the rest of ``FIELDS`` and ``errors`` (the last
    errors raised in user code), and ``"sources"``: the partitions source spouts read, as each task last
    reported them (``SOURCE_FIELDS``; only when there are some). With ``window_secs`` the counts, rates and
    figures are over the last that many seconds; with ``series``,
    ``"series": {component: [{ts, secs, emitted, ...}]}`` over the window (an
    hour without one). With ``task_ids``, ``"tasks"`` holds only those tasks and the ones keeping errors
    (a page of a 20,000-task topology asks for the rows it shows); components still sum every task.
    """
    from squall.state import Kind

    location = state_manager.get(Kind.TMASTER, topology_name)
    execution = state_manager.get(Kind.EXECUTION_STATE, topology_name)
    if location is None or execution is None:
        raise TMasterUnreachable(f"topology {topology_name!r} has no running topology master "
                                 "(not submitted, killed, or still starting)")
    where = f"{location.host}:{location.control_port}"
    try:
        conn = BlockingConnection.connect(location.host, location.control_port, execution.secret,
                                          schema.Role.CLIENT, container=-1, timeout=timeout)
    except (ProtocolError, OSError) as e:
        raise TMasterUnreachable(f"topology master of {topology_name!r} at {where} is unreachable: {e}") from e
    try:
        conn.send(control_frame(metrics_query=schema.MetricsQuery(component=component, window_secs=window_secs,
                                                                  series=series,
                                                                  task_ids=None if task_ids is None else list(task_ids))))
        reply = decode_control(conn.recv_frame(timeout))
    except (ProtocolError, OSError) as e:
        raise TMasterUnreachable(f"topology master of {topology_name!r} at {where} did not answer: {e}") from e
    finally:
        conn.close()
    if reply.metrics_response is None:
        raise TMasterUnreachable(f"topology master of {topology_name!r} at {where} sent no metrics")
    resp = reply.metrics_response
    out = {
        "components": {s.component: _summary(s) for s in resp.components},
        "tasks": {s.task_id: {"component": s.component, **_summary(s)} for s in resp.tasks},
    }
    if resp.checkpoints is not None:
        out["checkpoints"] = checkpoint_figures(resp.checkpoints)
    if resp.sources:
        out["sources"] = [{name: getattr(p, name) for name in SOURCE_FIELDS} for p in resp.sources]
    if series:
        out["series"] = {}
        for p in resp.series or []:
            out["series"].setdefault(p.component, []).append({name: getattr(p, name) for name in POINT_FIELDS})
    return out


class MetricsReporter:
    """Rows of a process of container ``container`` that is not a runtime role (the health manager) to its
    container's metrics manager at ``host:port``: one connection per ``send``, the rows it could not
    deliver (the manager restarting) kept, bounded, for the next."""

    def __init__(self, host: str, port: int, secret: str, container: int):
        self.host, self.port, self.secret, self.container = host, port, secret, container
        self.backlog = MetricsBacklog()

    def send(self, rows: list) -> None:
        for row in rows:
            self.backlog.add(row)
        if not len(self.backlog):
            return
        try:
            conn = BlockingConnection.connect(self.host, self.port, self.secret, schema.Role.CLIENT, self.container,
                                              timeout=CONNECT_TIMEOUT_SECS)
        except (ProtocolError, OSError) as e:
            log.info("metrics manager at %s:%d unreachable (%s); %d rows kept", self.host, self.port, e,
                     len(self.backlog))
            return
        try:
            conn.send(self.backlog.frame())
            self.backlog.answer([conn.recv_frame(CONNECT_TIMEOUT_SECS)])
        except (ProtocolError, OSError) as e:
            log.info("metrics manager at %s:%d: %s; %d rows kept", self.host, self.port, e, len(self.backlog))
        finally:
            conn.close()
            self.backlog.lost()  # a connection a send: rows it did not confirm go again
