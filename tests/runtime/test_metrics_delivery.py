"""Metrics rows reach the file once each across a metrics manager's death: a sender keeps a row until the
manager answers that it is written, sends again what a dead manager did not answer for (marked resent),
and a manager, restarted or not, writes a resent row only if its file does not have it yet."""
import json
import socket
import threading
import types

from squall.idl import schema
from squall.runtime.metrics_sender import BlockingMetricsSender, MetricsBacklog
from squall.runtime.metricsmgr import MetricsManager
from squall.runtime.protocol import (BlockingConnection, FrameReader, check_hello, control_frame, decode_control,
                                     make_challenge)
from squall.testing import wait_until

SECRET = "s3cret"


def _row(task, ts):
    return schema.MetricsRow(ts=ts, interval_secs=0.5, process="instance", component="c", task_id=task,
                             emit_count=int(ts), execute_count=0, ack_count=0, fail_count=0, queue_depth=0,
                             backpressure_ms=0.0, user="{}", pid=1, container=1)


def _rows(frame):
    return [(r.task_id, r.ts, bool(r.resent)) for r in decode_control(frame).metrics]


def test_a_row_stays_in_flight_until_written_and_goes_again_first_if_the_connection_is_lost():
    backlog = MetricsBacklog(limit=4)
    backlog.add(_row(1, 1.0))
    backlog.add(_row(1, 2.0))
    assert _rows(backlog.frame()) == [(1, 1.0, False), (1, 2.0, False)]
    assert backlog.frame() is None and len(backlog) == 2  # sent, not yet answered for
    backlog.written(1)
    backlog.add(_row(1, 3.0))
    backlog.lost()  # the manager died before answering for the second row
    assert _rows(backlog.frame()) == [(1, 2.0, True), (1, 3.0, False)]
    backlog.written(2)  # a new connection's count starts again
    assert len(backlog) == 0
    for ts in (4.0, 5.0, 6.0):
        backlog.add(_row(1, ts))
    backlog.frame()
    for ts in (7.0, 8.0):
        backlog.add(_row(1, ts))
    backlog.lost()  # five rows, room for four: the oldest goes
    assert _rows(backlog.frame()) == [(1, 5.0, True), (1, 6.0, True), (1, 7.0, False), (1, 8.0, False)]
    assert backlog.dropped == 1
    for ts in (9.0, 10.0):  # a manager that takes rows and never answers: in flight, bounded too
        backlog.add(_row(1, ts))
        backlog.frame()
    assert [r.ts for r in backlog.in_flight] == [7.0, 8.0, 9.0, 10.0] and backlog.dropped == 3
    backlog.written(5)  # its answer for the first five it was sent (5.0 to 9.0), two of them dropped already
    assert [r.ts for r in backlog.in_flight] == [10.0]


class Answers:
    """The manager's side of a connection: what it writes back."""

    def __init__(self, pid):
        self.peer = types.SimpleNamespace(pid=pid, written=0)
        self.sent = []

    def write(self, frame):
        self.sent.append(decode_control(frame).metrics_written)


def _manager(tmp_path):
    env = types.SimpleNamespace(args=types.SimpleNamespace(container=1), run_dir=str(tmp_path), packing=None,
                                name="t", execution=types.SimpleNamespace(run_id="r"),
                                metrics_dir=str(tmp_path / "metrics"))
    return MetricsManager(env)


def _written(mm):
    return [(r["task_id"], r["ts"]) for r in map(json.loads, open(mm.path)) if r["component"] == "c"]


def test_a_manager_writes_a_resent_row_only_if_its_file_does_not_have_it(tmp_path):
    mm = _manager(tmp_path)
    conn = Answers(pid=1)
    mm.frames(conn, [control_frame(metrics=[_row(1, 1.0), _row(2, 1.0)])])
    assert conn.sent == [2]
    # the manager is SIGKILLed after writing a frame, before its answer left: a successor on the same file
    mm = _manager(tmp_path)
    conn = Answers(pid=1)
    resent = [_row(1, 1.0), _row(2, 1.0), _row(1, 2.0)]  # the last one it never got
    for row in resent:
        row.resent = True
    mm.frames(conn, [control_frame(metrics=resent + [_row(2, 2.0)])])
    assert conn.sent == [4]  # every row of the frame is in the file: two were already
    mm.frames(conn, [control_frame(metrics=[_row(1, 1.5)])])  # not resent: written, whatever its ts
    assert conn.sent == [4, 5]
    assert _written(mm) == [(1, 1.0), (2, 1.0), (1, 2.0), (2, 2.0), (1, 1.5)]


class DyingManager(threading.Thread):
    """A metrics manager's listener that takes a frame of rows and dies without answering (a SIGKILL after
    the socket took the frame), then, restarted on the same port, answers for every row."""

    def __init__(self):
        super().__init__(daemon=True)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.got = []  # per connection, the rows of each frame

    def _frames(self, sock, reader):
        while data := sock.recv(1 << 16):
            yield from reader.feed(data)

    def run(self):
        for answers in (False, True):
            sock, _ = self.listener.accept()
            nonce, challenge = make_challenge("t")
            sock.sendall(challenge)
            frames = self._frames(sock, FrameReader())
            check_hello(next(frames), "t", SECRET, nonce)
            written = 0
            for frame in frames:
                self.got.append(_rows(frame))
                if not answers:
                    break
                written += len(self.got[-1])
                sock.sendall(control_frame(metrics_written=written))
            sock.close()


def test_rows_a_dead_manager_took_without_answering_are_sent_again_to_its_successor():
    manager = DyingManager()
    manager.start()
    env = types.SimpleNamespace(launch={"metricsmgr_port": manager.port}, secret=SECRET,
                                args=types.SimpleNamespace(container=1))
    sender = BlockingMetricsSender(env, "127.0.0.1", task=1, component="c")
    sender.send([_row(1, 1.0)])
    wait_until(lambda: manager.got == [[(1, 1.0, False)]], timeout=10, what="the first manager to take the row")
    wait_until(lambda: sender.conn.poll_frames() == [] and sender.conn.closed, timeout=10,
               what="the first manager's close to reach the sender")
    sender.send([_row(1, 2.0)])  # the next bucket: the manager is gone, its row goes again
    wait_until(lambda: len(manager.got) == 2, timeout=10, what="the second manager to get the rows")
    assert manager.got[1] == [(1, 1.0, True), (1, 2.0, False)]
    wait_until(lambda: sender.backlog.answer(sender.conn.poll_frames()) or len(sender.backlog) == 0, timeout=10,
               what="the second manager's answer")
    sender.send([_row(1, 3.0)])
    wait_until(lambda: len(manager.got) == 3, timeout=10, what="the next row")
    assert manager.got[2] == [(1, 3.0, False)]  # nothing answered for is sent again
    sender.conn.sock.shutdown(socket.SHUT_WR)
    manager.join(10)
    sender.conn.close()


def test_a_polled_connection_returns_what_arrived_before_its_peer_closed():
    listener = socket.create_server(("127.0.0.1", 0))
    client = socket.create_connection(listener.getsockname())
    server, _ = listener.accept()
    conn = BlockingConnection(client)
    assert conn.poll_frames() == [] and not conn.closed
    server.sendall(control_frame(metrics_written=3))
    server.close()
    frames = []
    wait_until(lambda: frames.extend(conn.poll_frames()) or conn.closed, timeout=10, what="the peer's close")
    assert [decode_control(f).metrics_written for f in frames] == [3] and conn.closed
    conn.close()
    listener.close()
