"""What the CLI uses to talk to a running topology's master."""
from __future__ import annotations

from typing import Any, Optional

from squall.errors import SquallError
from squall.idl import schema
from squall.runtime.protocol import BlockingConnection, ProtocolError, control_frame, decode_control


class TMasterUnreachable(SquallError):
    """The topology master of a topology cannot be reached or did not answer."""


def _summary(s: Any) -> dict:
    return {
        "emitted": s.emitted, "executed": s.executed, "acked": s.acked, "failed": s.failed,
        "emit_rate": s.emit_rate, "execute_rate": s.execute_rate, "ack_rate": s.ack_rate,
        "fail_rate": s.fail_rate, "execute_latency_ms": s.execute_latency_ms,
        "process_latency_ms": s.process_latency_ms,
    }


def query_metrics(state_manager: Any, topology_name: str, timeout: float = 5.0,
                  component: Optional[str] = None) -> dict:
    """Metrics of a running topology from its topology master.

    Returns ``{"components": {name: {...}}, "tasks": {task_id: {"component": name, ...}}}``
    where each entry has ``emitted, executed, acked, failed`` (totals since
    start), ``emit_rate, execute_rate, ack_rate, fail_rate`` (per second over
    the last bucket) and ``execute_latency_ms, process_latency_ms`` (means, or
    None before any tuple).
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
        conn.send(control_frame(metrics_query=schema.MetricsQuery(component=component)))
        reply = decode_control(conn.recv_frame(timeout))
    except (ProtocolError, OSError) as e:
        raise TMasterUnreachable(f"topology master of {topology_name!r} at {where} did not answer: {e}") from e
    finally:
        conn.close()
    if reply.metrics_response is None:
        raise TMasterUnreachable(f"topology master of {topology_name!r} at {where} sent no metrics")
    resp = reply.metrics_response
    return {
        "components": {s.component: _summary(s) for s in resp.components},
        "tasks": {s.task_id: {"component": s.component, **_summary(s)} for s in resp.tasks},
    }
