"""Sending metrics rows to the container's metrics manager, without losing them to its restart.

Every process reports one row per bucket. Rows wait in a bounded backlog
until the metrics manager has them: a sender that cannot reach it (it is
restarting: its executor keeps its port) keeps what it could not deliver and
sends it all once it is back. Past ``MAX_BACKLOG_ROWS`` the oldest rows go,
counted in the log.

A row sent stays *in flight* until the manager answers that it is in the file
(``Control.metrics_written``, a running count per connection): a row the socket
took but the manager never read, because it was SIGKILLed, is not lost. When a
connection goes, its rows in flight go back to the front of the backlog marked
``resent``; the manager writes a resent row only if the file does not have it
yet, so each row is in the file once.

``MetricsSender`` serves the asyncio roles (topology master, stream manager);
``BlockingMetricsSender`` the instance's single-threaded loop.
"""
from __future__ import annotations

import asyncio
import collections
import logging
from typing import Any, Optional

from squall.idl import schema
from squall.runtime.protocol import BlockingConnection, Connection, ProtocolError, control_frame, decode_control

log = logging.getLogger(__name__)

MAX_BACKLOG_ROWS = 10_000  # a day of 5 s buckets is ~17,000: hours of one process's rows
CONNECT_TIMEOUT_SECS = 0.5  # an instance's loop waits at most this per bucket while the manager is down


class MetricsBacklog:
    """Rows not yet in the metrics manager's file, oldest first: waiting, then in flight on the current
    connection; bounded. A state machine: the senders do the I/O."""

    def __init__(self, limit: int = MAX_BACKLOG_ROWS):
        self.rows: collections.deque = collections.deque(maxlen=limit)  # waiting to be sent
        self.in_flight: collections.deque = collections.deque()  # sent on this connection, not yet confirmed
        self.confirmed = 0  # rows of this connection the manager has said are in its file
        self.dropped = 0

    def add(self, row: Any) -> None:
        if len(self.rows) == self.rows.maxlen:
            self._drop(1)
        self.rows.append(row)

    def frame(self) -> Optional[bytes]:
        """Everything waiting, as one frame (None when nothing waits); it is in flight from now."""
        if not self.rows:
            return None
        self.in_flight.extend(self.rows)
        frame = control_frame(metrics=list(self.rows))
        self.rows.clear()
        while len(self.in_flight) > self.rows.maxlen:  # a manager that takes rows and never answers
            self.in_flight.popleft()
            self.confirmed += 1  # its answers count it still
            self._drop(1)
        return frame

    def written(self, count: int) -> None:
        """The manager's answer: the first ``count`` rows sent on this connection are in its file."""
        for _ in range(min(count - self.confirmed, len(self.in_flight))):
            self.in_flight.popleft()
        self.confirmed = max(self.confirmed, count)

    def lost(self) -> None:
        """The connection is gone: what it did not confirm may or may not be in the file. It waits again,
        first, marked resent."""
        for row in self.in_flight:
            row.resent = True
        waiting = list(self.in_flight) + list(self.rows)
        self._drop(len(waiting) - self.rows.maxlen)
        self.rows = collections.deque(waiting, maxlen=self.rows.maxlen)  # keeps the newest
        self.in_flight.clear()
        self.confirmed = 0

    def answer(self, frames: list) -> None:
        """Take the manager's answers in ``frames``; ProtocolError for anything else."""
        for f in frames:
            written = decode_control(f).metrics_written
            if written is None:
                raise ProtocolError("unexpected frame from the metrics manager")
            self.written(written)

    def _drop(self, n: int) -> None:
        for _ in range(max(0, n)):
            self.dropped += 1
            if self.dropped % 1000 == 1:
                log.warning("metrics manager unreachable for long: %d oldest rows dropped so far", self.dropped)

    def __len__(self) -> int:
        return len(self.rows) + len(self.in_flight)


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
        if self.conn is not None and self.conn.closed:
            self.lost(self.conn)
        if self.conn is None:
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

    # connection handler
    def ready(self, conn: Connection) -> None:
        self.flush()

    def lost(self, conn: Connection) -> None:
        if conn is self.conn:
            self.conn = None
            self.backlog.lost()

    def frames(self, conn: Connection, frames: list) -> None:
        if conn is self.conn:
            self.backlog.answer(frames)


class BlockingMetricsSender:
    """An instance's connection to its metrics manager, with a backlog."""

    def __init__(self, env: Any, host: str, task: int, component: str):
        self.env, self.host, self.task, self.component = env, host, task, component
        self.backlog = MetricsBacklog()
        self.conn: Optional[BlockingConnection] = None

    def send(self, rows: list) -> None:
        """Send ``rows`` (and what earlier sends could not, or sent without an answer)."""
        port = self.env.launch.get("metricsmgr_port")
        if not port:
            return
        for row in rows:
            self.backlog.add(row)
        try:
            if self.conn is not None:
                self.backlog.answer(self.conn.poll_frames())  # its answers so far
                if self.conn.closed:  # the manager is gone: what it did not confirm goes again
                    self._drop_connection()
            if self.conn is None:
                self.conn = BlockingConnection.connect(
                    self.host, port, self.env.secret, schema.Role.INSTANCE, self.env.args.container,
                    task_id=self.task, component=self.component, timeout=CONNECT_TIMEOUT_SECS)
            frame = self.backlog.frame()
            if frame is not None:
                self.conn.send(frame)
        except (OSError, ProtocolError) as e:
            log.warning("metrics manager unreachable (%s); %d rows kept until it is back", e, len(self.backlog))
            self._drop_connection()

    def _drop_connection(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None
            self.backlog.lost()
