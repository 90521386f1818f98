"""Sending metrics rows to the container's metrics manager, without losing them to its restart.

Every process reports one row per bucket. Rows wait in a bounded backlog
until the metrics manager has them: a sender that cannot reach it (it is
restarting: its executor keeps its port) keeps what it could not deliver and
sends it all once it is back. Past ``MAX_BACKLOG_ROWS`` the oldest rows go,
counted in the log.

``MetricsSender`` serves the asyncio roles (topology master, stream manager);
``BlockingMetricsSender`` the instance's single-threaded loop.
"""
from __future__ import annotations

import asyncio
import collections
import logging
import socket
from typing import Any, Optional

from squall.idl import schema
from squall.runtime.protocol import BlockingConnection, Connection, ProtocolError, control_frame

log = logging.getLogger(__name__)

MAX_BACKLOG_ROWS = 10_000  # a day of 5 s buckets is ~17,000: hours of one process's rows
CONNECT_TIMEOUT_SECS = 0.5  # an instance's loop waits at most this per bucket while the manager is down


class MetricsBacklog:
    """Rows not yet delivered, oldest first; bounded."""

    def __init__(self, limit: int = MAX_BACKLOG_ROWS):
        self.rows: collections.deque = collections.deque(maxlen=limit)
        self.dropped = 0

    def add(self, row: Any) -> None:
        if len(self.rows) == self.rows.maxlen:
            self.dropped += 1
            if self.dropped % 1000 == 1:
                log.warning("metrics manager unreachable for long: %d oldest rows dropped so far", self.dropped)
        self.rows.append(row)

    def frame(self) -> Optional[bytes]:
        """Everything waiting, as one frame (None when nothing waits)."""
        return control_frame(metrics=list(self.rows)) if self.rows else None

    def clear(self) -> None:
        self.rows.clear()

    def __len__(self) -> int:
        return len(self.rows)


class MetricsSender:
    """An asyncio role's connection to its metrics manager, with a backlog."""

    def __init__(self, loop: asyncio.AbstractEventLoop, topology: str, secret: str, max_frame: int,
                 host: str, port: Optional[int], hello: dict):
        self.loop = loop
        self.topology, self.secret, self.max_frame = topology, secret, max_frame
        self.host, self.port = host, port
        self.hello = hello
        self.backlog = MetricsBacklog()
        self.conn: Optional[Connection] = None

    async def send(self, row: Any) -> None:
        """Queue ``row`` and deliver everything queued if the metrics manager is there."""
        if not self.port:
            return
        self.backlog.add(row)
        if self.conn is None or self.conn.closed:
            self.conn = None
            try:
                _, self.conn = await self.loop.create_connection(
                    lambda: Connection(self, self.topology, self.secret, False, self.max_frame,
                                       hello_args=self.hello), self.host, self.port)
            except OSError as e:
                log.info("metrics manager not reachable (%s); %d rows kept", e, len(self.backlog))
                return
        self.flush()

    def flush(self) -> None:
        if self.conn is not None and self.conn.authenticated and not self.conn.closed:
            frame = self.backlog.frame()
            if frame is not None:
                self.conn.write(frame)
                self.backlog.clear()

    # connection handler
    def ready(self, conn: Connection) -> None:
        self.flush()

    def lost(self, conn: Connection) -> None:
        if conn is self.conn:
            self.conn = None

    def frames(self, conn: Connection, frames: list) -> None:
        raise ProtocolError("unexpected frames from the metrics manager")


class BlockingMetricsSender:
    """An instance's connection to its metrics manager, with a backlog."""

    def __init__(self, env: Any, host: str, task: int, component: str):
        self.env, self.host, self.task, self.component = env, host, task, component
        self.backlog = MetricsBacklog()
        self.conn: Optional[BlockingConnection] = None

    def send(self, rows: list) -> None:
        """Send ``rows`` (and what earlier sends could not)."""
        port = self.env.launch.get("metricsmgr_port")
        if not port:
            return
        for row in rows:
            self.backlog.add(row)
        if self.conn is not None and _closed_by_peer(self.conn.sock):
            self.conn.close()  # a write to it would vanish: the kernel takes one after the peer is gone
            self.conn = None
        try:
            if self.conn is None:
                self.conn = BlockingConnection.connect(
                    self.host, port, self.env.secret, schema.Role.INSTANCE, self.env.args.container,
                    task_id=self.task, component=self.component, timeout=CONNECT_TIMEOUT_SECS)
            self.conn.send(self.backlog.frame())
            self.backlog.clear()
        except (OSError, ProtocolError) as e:
            log.warning("metrics manager unreachable (%s); %d rows kept until it is back", e, len(self.backlog))
            if self.conn is not None:
                self.conn.close()
            self.conn = None


def _closed_by_peer(sock: Any) -> bool:
    """The metrics manager never writes to a sender: anything to read means it closed or died."""
    try:
        return sock.recv(1, socket.MSG_DONTWAIT | socket.MSG_PEEK) == b""
    except (BlockingIOError, InterruptedError):
        return False
    except OSError:
        return True
