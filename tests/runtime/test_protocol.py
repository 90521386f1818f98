"""Real sockets against a real stream manager: handshake, routing, bad frames."""
import asyncio
import socket
import struct
import threading

import msgpack
import pytest

from squall.idl import schema
from squall.runtime.protocol import (DATA, DATA_HEADER_SIZE, PROTOCOL_VERSION, BlockingConnection, FrameReader,
                                     ProtocolError, data_frame, frame, frame_dest, listen_socket, payload_packer)
from squall.runtime.stmgr import StreamManager
from squall.testing import wait_until

SECRET = "s3cret"


@pytest.fixture
def stmgr():
    sm = StreamManager("t", SECRET, 1, "127.0.0.1", spouts={"spout"}, high_bytes=1 << 20, low_bytes=1 << 19,
                       max_frame=1 << 20)
    listener = listen_socket("127.0.0.1")
    port = listener.getsockname()[1]
    loop = asyncio.new_event_loop()
    th = threading.Thread(target=lambda: loop.run_until_complete(sm.serve(listener)), daemon=True)
    th.start()
    wait_until(lambda: sm.metrics is not None, timeout=5, what="the stream manager to serve", interval=0.02)
    yield sm, port
    sm.stop()
    th.join(5)


def connect(port, task, secret=SECRET, component="bolt"):
    return BlockingConnection.connect("127.0.0.1", port, secret, schema.Role.INSTANCE, 1, task_id=task,
                                      component=component)


def test_frame_reader_splits_and_refuses_garbage():
    r = FrameReader(max_frame=100)
    f = data_frame(7, b"abc") + frame(4, b"x")
    assert r.feed(f[:3]) == []
    out = r.feed(f[3:])
    assert [x[4] for x in out] == [DATA, 4] and frame_dest(out[0]) == 7
    with pytest.raises(ProtocolError, match="out of range"):
        FrameReader(max_frame=100).feed(struct.pack(">IB", 1000, 3))
    with pytest.raises(ProtocolError, match="unknown frame type"):
        FrameReader().feed(struct.pack(">IB", 1, 99))


def test_payloads_are_msgpack_s_bytes_whatever_the_types_of_their_values():
    import collections
    import enum

    class Level(enum.IntEnum):
        HIGH = 2

    packb, reference = payload_packer(), msgpack.Packer(use_bin_type=True).pack
    exact = [3, [["default", [["word", 1.5], ["other", -2.0]], [[7, 1 << 63]]]], 0]
    others = [3, [["default", [("a", 1), ["b", Level.HIGH], collections.OrderedDict(k=[b"x", None, True])]]], 0]
    for payload in (exact, others, exact):  # exact types, then values that need the default checks, then both
        assert packb(payload) == reference(payload)
    with pytest.raises(TypeError, match="can not serialize 'object'"):
        packb([object()])
    assert packb(exact) == reference(exact)


def test_local_routing_without_decoding(stmgr):
    sm, port = stmgr
    a, b = connect(port, 1), connect(port, 2)
    wait_until(lambda: set(sm.state.local) == {1, 2}, timeout=5, what="set(sm.state.local) == {1, 2}", interval=0.02)
    payload = b"\xc1 not even msgpack"  # the stream manager must not decode it
    a.send(data_frame(2, payload))
    got = b.recv_frame(5)
    assert frame_dest(got) == 2 and got[DATA_HEADER_SIZE:] == payload


def test_wrong_secret_is_refused(stmgr):
    sm, port = stmgr
    bad = connect(port, 3, secret="wrong")
    with pytest.raises(ProtocolError, match="closed"):
        bad.recv_frame(5)
    assert 3 not in sm.state.local


def test_malformed_frame_closes_only_that_connection(stmgr):
    sm, port = stmgr
    good_a, good_b = connect(port, 1), connect(port, 2)
    evil = connect(port, 5)
    wait_until(lambda: set(sm.state.local) == {1, 2, 5}, timeout=5, what="set(sm.state.local) == {1, 2, 5}", interval=0.02)
    evil.send(struct.pack(">IB", 3, 77) + b"zz")  # unknown frame type
    with pytest.raises(ProtocolError):
        evil.recv_frame(5)
    wait_until(lambda: 5 not in sm.state.local, timeout=5, what="5 not in sm.state.local", interval=0.02)
    good_a.send(data_frame(2, msgpack.packb([1, [["default", [["x"]]]], 0])))
    assert frame_dest(good_b.recv_frame(5)) == 2
    # a client that sends data before HELLO is closed too
    raw = socket.create_connection(("127.0.0.1", port))
    raw.sendall(data_frame(2, b"sneaky"))
    raw.settimeout(5)
    wait_until(lambda: raw.recv(4096) == b"", timeout=5, what="raw.recv(4096) == b''", interval=0.02)


def _raw(port):
    s = socket.create_connection(("127.0.0.1", port))
    s.settimeout(10)
    assert s.recv(4096)  # the CHALLENGE
    return s


def _closed(sock, timeout=10):
    sock.settimeout(timeout)
    try:
        while True:
            if sock.recv(65536) == b"":
                return True
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


def test_a_peer_of_another_protocol_version_is_refused_clearly(stmgr, caplog):
    import os

    from squall.idl import encode
    from squall.runtime.protocol import CHALLENGE, HELLO, decode_body, proof

    sm, port = stmgr
    # a client of the version before, by hand: the stream manager runs in this process, so patching
    # PROTOCOL_VERSION for the client would race with its check of the HELLO
    old = BlockingConnection(socket.create_connection(("127.0.0.1", port)))
    challenge = old.recv_frame(5)
    assert challenge[4] == CHALLENGE
    nonce = decode_body(challenge, schema.Challenge, "CHALLENGE").nonce
    old.send(frame(HELLO, encode(schema.Hello(
        topology_name="t", role=schema.Role.INSTANCE, proof=proof(SECRET, nonce), container=1, pid=os.getpid(),
        task_id=4, component="bolt", version=PROTOCOL_VERSION - 1))))
    with pytest.raises(ProtocolError):
        old.recv_frame(5)
    assert 4 not in sm.state.local
    assert (f"peer speaks wire protocol version {PROTOCOL_VERSION - 1}, this process speaks {PROTOCOL_VERSION}"
            in caplog.text)


def _still_open(sock):
    sock.setblocking(False)
    try:
        return sock.recv(65536) != b""
    except BlockingIOError:
        return True
    except ConnectionResetError:
        return False
    finally:
        sock.setblocking(True)


def test_before_the_handshake_a_connection_may_send_one_small_frame(stmgr):
    """How long the deadline takes is bench/bounds.py's figure; here, what closes and in which order."""
    sm, port = stmgr
    silent = _raw(port)  # says nothing
    partial = _raw(port)
    partial.sendall(struct.pack(">IB", 100, 2) + b"x" * 10)  # half a HELLO, then nothing
    big = _raw(port)
    big.sendall(struct.pack(">IB", 1 << 20, 2) + b"x" * 1000)  # announces a 1 MiB HELLO: refused at once
    assert _closed(big)
    assert _still_open(silent) and _still_open(partial), "closed before the handshake deadline"
    assert _closed(silent, timeout=15)  # closed at the handshake deadline
    assert _closed(partial, timeout=15)
    good = connect(port, 1)  # the port still serves
    wait_until(lambda: 1 in sm.state.local, timeout=5, what="1 in sm.state.local", interval=0.02)
    good.close()


def test_a_listener_holds_a_bounded_number_of_unproven_connections(stmgr, caplog):
    from squall.runtime.protocol import HANDSHAKE_MAX_PENDING

    sm, port = stmgr
    held = [_raw(port) for _ in range(HANDSHAKE_MAX_PENDING)]
    extra = socket.create_connection(("127.0.0.1", port))
    assert _closed(extra), "a connection past the bound was kept"
    assert sum("refused connection" in r.message for r in caplog.records) <= 2, "refusals are rate-limited"
    for s in held:
        s.close()
    wait_until(lambda: sm.gate.pending == 0, timeout=5, what="sm.gate.pending == 0", interval=0.02)
    good = connect(port, 1)
    wait_until(lambda: 1 in sm.state.local, timeout=5, what="1 in sm.state.local", interval=0.02)
    good.close()


def test_refusals_are_logged_at_a_bounded_rate(caplog):
    import logging

    from squall.runtime.protocol import RateLimitedLog

    limited = RateLimitedLog(logging.getLogger("test.refusals"), every=60)
    with caplog.at_level(logging.WARNING):
        for i in range(1000):
            limited.warning("refused %d", i)
        limited.last -= 61
        limited.warning("refused again")
    assert [r.getMessage() for r in caplog.records] == [
        "refused 0", "refused again (999 more like it in the last 61s, not logged)"]
