"""The wire protocol of the runtime processes (docs/protocol.md).

Every message is a frame: a 4-byte big-endian length of what follows, a
1-byte frame type, then the body. Bodies are Thrift structs of the IDL
(CHALLENGE, HELLO, CONTROL) or, for DATA, ACK and MARKER, a 4-byte destination
task id and a 4-byte tuple count followed by a msgpack body that only the
destination instance decodes (DATA: ``[sender task, runs, epoch]``, a run of rows or of
columns; MARKER: ``[sender task, checkpoint id, epoch]``, docs/state.md).

Every connection starts with the server's CHALLENGE (a random nonce) and the
client's HELLO carrying HMAC-SHA256(secret, nonce) and the protocol version.
Before a valid HELLO a connection may send one frame of at most
``HANDSHAKE_MAX_FRAME`` bytes within ``HANDSHAKE_SECS``, and a listener holds
at most ``HANDSHAKE_MAX_PENDING`` such connections; anything else closes it,
logged at a bounded rate (``RateLimitedLog``).
"""
from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
import os
import socket
import struct
import time
from typing import Callable, Optional, Protocol, Type, TypeVar, Union

import msgpack

from squall.errors import SquallError
from squall.idl import DecodeError, decode, encode, schema

log = logging.getLogger(__name__)

Buffer = Union[bytes, bytearray, memoryview]  # a frame as read: the reader hands out views
Struct = TypeVar("Struct")

CHALLENGE, HELLO, DATA, CONTROL, ACK, MARKER = 1, 2, 3, 4, 5, 6
FRAME_TYPES = {CHALLENGE: "CHALLENGE", HELLO: "HELLO", DATA: "DATA", CONTROL: "CONTROL", ACK: "ACK",
               MARKER: "MARKER"}
ROUTED = (DATA, ACK, MARKER)  # frames a stream manager forwards by their destination task

# 2: DATA/ACK headers carry a tuple count, ACK frames exist, HELLO carries the version.
# 3: at least once, a run carried edge ids and spans of roots (not [edge, root, ...] per tuple).
# 4: at least once, a run carries spans of [start, roots, value] (one root: a bare int), no per-tuple id.
# 5: a DATA batch carries its sender's epoch; MARKER frames (a checkpoint's, in line with the data).
# 6: a run may be columnar, [stream, [field values, ...], spans, count] (emit_columns).
# 7: a physical plan may come as a delta of the last one (Control.plan_delta); registrations name the plan held.
# 8: the metrics manager answers each frame of rows (Control.metrics_written); a row sent again is marked resent.
PROTOCOL_VERSION = 8

HEADER = struct.Struct(">IB")  # length of (type + body), type
DEST = struct.Struct(">I")
DEST_COUNT = struct.Struct(">II")  # destination task, tuples in the batch
DATA_FRAME_HEAD = struct.Struct(">IBII")  # HEADER then DEST_COUNT
HEADER_SIZE = HEADER.size  # 5
DATA_HEADER_SIZE = HEADER_SIZE + DEST_COUNT.size  # 13
DEFAULT_MAX_FRAME = 64 * 1024 * 1024

HANDSHAKE_MAX_FRAME = 4096  # a CHALLENGE or HELLO is ~100 bytes
HANDSHAKE_SECS = 5.0
HANDSHAKE_MAX_PENDING = 64


class ProtocolError(SquallError):
    """A peer sent something that is not a valid frame at this point."""


class VersionMismatch(ProtocolError):
    """A peer that knows the secret speaks another version of this protocol."""


# --------------------------------------------------------------- encoding
def frame(ftype: int, body: bytes) -> bytes:
    return HEADER.pack(len(body) + 1, ftype) + body


def data_frame(dest_task: int, payload: bytes, count: int = 0, ftype: int = DATA) -> bytes:
    """A DATA (or ACK) frame for ``dest_task`` around an already packed msgpack batch of ``count`` tuples."""
    return data_header(dest_task, len(payload), count, ftype) + payload


def payload_packer() -> Callable[[object], bytes]:
    """msgpack for the payloads of DATA, ACK and MARKER frames: the bytes of ``msgpack.Packer(use_bin_type=
    True)``, packed with exact type checks (``strict_types``) for as long as every value is of an exact
    builtin type. msgpack's default checks test a value against each type ahead of its own, subclasses
    included (a ``str`` is first tested as a ``float`` subclass); the exact ones pack a row of a word and
    a float in a third less. The first value of another type (a tuple, a subclass, or one msgpack
    refuses) packs its payload again with the default checks, which this packer keeps from then on."""
    general = msgpack.Packer(use_bin_type=True).pack
    packing = msgpack.Packer(use_bin_type=True, strict_types=True).pack

    def pack(obj: object) -> bytes:
        nonlocal packing
        try:
            return packing(obj)
        except TypeError:
            if packing is general:
                raise
            packing = general
            return general(obj)

    return pack


def data_header(dest_task: int, size: int, count: int, ftype: int = DATA) -> bytes:
    """The first ``DATA_HEADER_SIZE`` bytes of a ``data_frame`` whose payload is ``size`` bytes: an
    output buffer takes the header, then the payload, with no frame built in between."""
    return DATA_FRAME_HEAD.pack(size + 9, ftype, dest_task, count)


def frame_count(frame_bytes: Buffer) -> int:
    """Tuples in a DATA frame, from its header."""
    return DEST_COUNT.unpack_from(frame_bytes, HEADER_SIZE)[1]


def control_frame(**fields: object) -> bytes:
    """A CONTROL frame with one field of the ``Control`` struct set."""
    return frame(CONTROL, encode(schema.Control(**fields)))


def frame_dest(frame_bytes: Buffer) -> int:
    """Destination task of a DATA frame (header only; the batch is not decoded)."""
    return DEST.unpack_from(frame_bytes, HEADER_SIZE)[0]


def decode_body(frame_bytes: Buffer, struct_type: Type[Struct], what: str) -> Struct:
    """The Thrift struct in a frame's body; a malformed one is a ProtocolError naming ``what``."""
    try:
        return decode(struct_type, bytes(frame_bytes[HEADER_SIZE:]))
    except DecodeError as e:
        raise ProtocolError(f"malformed {what}: {e}") from e


def decode_control(frame_bytes: Buffer) -> schema.Control:
    return decode_body(frame_bytes, schema.Control, "CONTROL frame")


def proof(secret: str, nonce: bytes) -> bytes:
    return hmac.new(secret.encode(), nonce, hashlib.sha256).digest()


def make_challenge(topology: str) -> tuple[bytes, bytes]:
    """``(nonce, CHALLENGE frame)``."""
    nonce = os.urandom(32)
    return nonce, frame(CHALLENGE, encode(schema.Challenge(topology_name=topology, nonce=nonce)))


def make_hello(secret: str, challenge_frame: bytes, role: int, container: int,
               task_id: Optional[int] = None, component: Optional[str] = None, chain: Optional[list] = None) -> bytes:
    """The HELLO frame answering a CHALLENGE frame."""
    if challenge_frame[4] != CHALLENGE:
        raise ProtocolError(f"expected CHALLENGE, got frame type {challenge_frame[4]}")
    challenge = decode_body(challenge_frame, schema.Challenge, "CHALLENGE")
    hello = schema.Hello(
        topology_name=challenge.topology_name, role=role, proof=proof(secret, challenge.nonce),
        container=container, pid=os.getpid(), task_id=task_id, component=component, version=PROTOCOL_VERSION,
        chain=chain,
    )
    return frame(HELLO, encode(hello))


def check_hello(frame_bytes: bytes, topology: str, secret: str, nonce: bytes) -> schema.Hello:
    """The Hello of a HELLO frame if it proves the secret; ProtocolError otherwise."""
    if frame_bytes[4] != HELLO:
        raise ProtocolError(f"expected HELLO first, got frame type {frame_bytes[4]}")
    hello = decode_body(frame_bytes, schema.Hello, "HELLO")
    if hello.topology_name != topology:
        raise ProtocolError(f"HELLO for topology {hello.topology_name!r}, this is {topology!r}")
    if not hmac.compare_digest(bytes(hello.proof), proof(secret, nonce)):
        raise ProtocolError("HELLO with a wrong secret")
    if hello.version != PROTOCOL_VERSION:
        raise VersionMismatch(f"peer speaks wire protocol version {hello.version or 1}, this process speaks "
                            f"{PROTOCOL_VERSION}: processes of one topology must run the same Squall version")
    return hello


# --------------------------------------------------------------- parsing
class FrameReader:
    """Incremental frame parser: feed bytes, get whole frames (header included)."""

    __slots__ = ("buf", "max_frame")

    def __init__(self, max_frame: int = DEFAULT_MAX_FRAME):
        self.buf = bytearray()
        self.max_frame = max_frame

    def feed(self, data: bytes, most: int = 0) -> list:
        """Whole frames of what was fed so far (at most ``most`` of them when it is not 0)."""
        buf = self.buf
        buf += data
        frames = []
        pos, end = 0, len(buf)
        unpack = HEADER.unpack_from
        while end - pos >= HEADER_SIZE and not (most and len(frames) >= most):
            length, ftype = unpack(buf, pos)
            if length < 1 or length > self.max_frame:
                raise ProtocolError(f"frame length {length} out of range (max {self.max_frame})")
            if ftype not in FRAME_TYPES:
                raise ProtocolError(f"unknown frame type {ftype}")
            stop = pos + 4 + length
            if stop > end:
                break
            if ftype in ROUTED and length < 9:
                raise ProtocolError(f"{FRAME_TYPES[ftype]} frame without a destination and count")
            frames.append(bytes(buf[pos:stop]))
            pos = stop
        if pos:
            del buf[:pos]
        return frames

    @property
    def pending(self) -> int:
        return len(self.buf)


# --------------------------------------------------------------- blocking client
class BlockingConnection:
    """A client connection for processes that run user code (instances, the CLI)."""

    def __init__(self, sock: socket.socket, max_frame: int = DEFAULT_MAX_FRAME):
        self.sock = sock
        self.reader = FrameReader(max_frame)
        self.frames: list = []
        self.closed = False  # poll_frames saw the peer close

    @classmethod
    def connect(cls, host: str, port: int, secret: str, role: int, container: int,
                task_id: Optional[int] = None, component: Optional[str] = None,
                timeout: float = 5.0, max_frame: int = DEFAULT_MAX_FRAME,
                chain: Optional[list] = None) -> "BlockingConnection":
        try:
            sock = socket.create_connection((host, port), timeout=timeout)
        except OSError as e:
            raise ProtocolError(f"cannot connect to {host}:{port}: {e}") from e
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        bound_buffers(sock)
        conn = cls(sock, HANDSHAKE_MAX_FRAME)
        try:
            challenge = conn.recv_frame(timeout)
            sock.sendall(make_hello(secret, challenge, role, container, task_id, component, chain))
        except BaseException:
            sock.close()
            raise
        conn.reader.max_frame = max_frame
        sock.settimeout(None)
        return conn

    def recv_frame(self, timeout: Optional[float] = None) -> bytes:
        """The next frame; ProtocolError on timeout or a closed connection."""
        self.sock.settimeout(timeout)
        while not self.frames:
            try:
                data = self.sock.recv(1 << 20)
            except socket.timeout as e:
                raise ProtocolError("timed out waiting for a frame") from e
            except OSError as e:
                raise ProtocolError(f"connection failed: {e}") from e
            if not data:
                raise ProtocolError("connection closed by peer")
            self.frames.extend(self.reader.feed(data))
        return self.frames.pop(0)

    def poll_frames(self) -> list:
        """The frames that have arrived, without waiting; sets ``closed`` once the peer has closed."""
        try:
            while not self.closed:
                data = self.sock.recv(1 << 20, socket.MSG_DONTWAIT)
                if not data:
                    self.closed = True
                self.frames.extend(self.reader.feed(data))
        except (BlockingIOError, InterruptedError):
            pass
        except OSError:
            self.closed = True
        frames, self.frames = self.frames, []
        return frames

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass


# --------------------------------------------------------------- limits
class HandshakeGate:
    """One listener's connections that have not yet proved the secret: at most ``limit`` at once."""

    def __init__(self, limit: int = HANDSHAKE_MAX_PENDING):
        self.limit = limit
        self.pending = 0

    def enter(self) -> bool:
        if self.pending >= self.limit:
            return False
        self.pending += 1
        return True

    def leave(self) -> None:
        self.pending -= 1


class RateLimitedLog:
    """At most one line per ``every`` seconds; the lines held back are counted in the next one."""

    def __init__(self, logger: logging.Logger, every: float = 10.0):
        self.logger = logger
        self.every = every
        self.last = float("-inf")
        self.suppressed = 0

    def warning(self, msg: str, *args: object, **kwargs: object) -> None:
        now = time.monotonic()
        if now - self.last < self.every:
            self.suppressed += 1
            return
        if self.suppressed:
            msg += f" ({self.suppressed} more like it in the last {now - self.last:.0f}s, not logged)"
        self.last, self.suppressed = now, 0
        self.logger.warning(msg, *args, **kwargs)


REFUSALS = RateLimitedLog(log)


# --------------------------------------------------------------- asyncio
class ConnectionHandler(Protocol):
    """What a ``Connection`` reports to (the role's shell); ``write_paused(conn, paused)`` is optional."""

    def accept(self, conn: "Connection", hello: schema.Hello) -> bool:
        """Server side: the peer proved the secret; False refuses it (the connection closes)."""

    def ready(self, conn: "Connection") -> None:
        """The handshake is over: frames may flow."""

    def frames(self, conn: "Connection", frames: list) -> None:
        """Frames arrived, in order."""

    def lost(self, conn: "Connection") -> None:
        """The connection is gone (reported once)."""


class Connection(asyncio.Protocol):
    """One authenticated connection of an asyncio process (stmgr, tmaster, metricsmgr).

    ``handler`` gets ``accept(conn, hello) -> bool`` (server side),
    ``ready(conn)``, ``frames(conn, list_of_frames)``, ``lost(conn)`` and,
    if it has one, ``write_paused(conn, paused)``. ``peer`` holds what the
    handler knows the other end as (a typed identity, set by the handler).
    Server side: sends the CHALLENGE, reads only a valid HELLO first.
    Client side: answers the CHALLENGE with a HELLO, then is ready.
    """

    def __init__(self, handler: ConnectionHandler, topology: str, secret: str, server: bool,
                 max_frame: int = DEFAULT_MAX_FRAME, hello_args: Optional[dict] = None,
                 name: str = "?", gate: Optional["HandshakeGate"] = None):
        self.handler = handler
        self.topology = topology
        self.secret = secret
        self.server = server
        self.max_frame = max_frame
        self.reader = FrameReader(HANDSHAKE_MAX_FRAME)  # the peer's first frame must be small
        self.gate = gate
        self._deadline: Optional[asyncio.TimerHandle] = None
        self.hello_args = hello_args or {}
        self.name = name
        self.transport: Optional[asyncio.Transport] = None
        self.authenticated = False
        self.hello: Optional[schema.Hello] = None
        self.nonce = b""
        self.closed = False
        self.paused = False  # reading paused (backpressure)
        self.peer: object = None  # the handler's identity for the other end (a typed value), once known
        self.lost_reported = False

    # asyncio.Protocol -----------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport
        sock = transport.get_extra_info("socket")
        if sock is not None:
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                bound_buffers(sock)  # outbound asyncio connections (stmgr -> stmgr) too
            except OSError:
                pass
        peer = transport.get_extra_info("peername")
        if self.server:
            self.name = f"{peer[0]}:{peer[1]}" if peer else "?"
            if self.gate is not None and not self.gate.enter():
                self.gate = None
                self.abort(f"{HANDSHAKE_MAX_PENDING} connections are already handshaking on this port")
                return
            self._deadline = asyncio.get_event_loop().call_later(HANDSHAKE_SECS, self._handshake_late)
            self.nonce, challenge = make_challenge(self.topology)
            transport.write(challenge)

    def _handshake_late(self) -> None:
        if not self.authenticated:
            self.abort(f"no valid HELLO within {HANDSHAKE_SECS:g}s")

    def _handshake_over(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        if self.gate is not None:
            self.gate.leave()
            self.gate = None

    def data_received(self, data: bytes) -> None:
        if self.closed:
            return
        try:
            if self.authenticated:
                frames = self.reader.feed(data)
            else:  # the first frame alone, with the handshake's size limit
                frames = self.reader.feed(data, most=1)
            if not self.authenticated and frames:
                first = frames.pop(0)
                if self.server:
                    self.hello = check_hello(first, self.topology, self.secret, self.nonce)
                    if not self.handler.accept(self, self.hello):
                        self.abort("refused")
                        return
                else:
                    self.transport.write(make_hello(self.secret, first, **self.hello_args))
                self.authenticated = True
                self.reader.max_frame = self.max_frame
                self._handshake_over()
                self.handler.ready(self)
                frames = self.reader.feed(b"")  # what came after it
            if frames and self.authenticated:
                self.handler.frames(self, frames)
        except VersionMismatch as e:  # a process of our own topology: always worth a line
            self.abort(str(e), loud=True)
        except ProtocolError as e:
            self.abort(str(e))

    def connection_lost(self, exc: Optional[Exception]) -> None:
        self.closed = True
        self._handshake_over()
        self._report_lost()

    def _report_lost(self) -> None:
        if not self.lost_reported:
            self.lost_reported = True
            self.handler.lost(self)

    def pause_writing(self) -> None:
        handler = getattr(self.handler, "write_paused", None)
        if handler:
            handler(self, True)

    def resume_writing(self) -> None:
        handler = getattr(self.handler, "write_paused", None)
        if handler:
            handler(self, False)

    # API ----------------------------------------------------------------------
    def write(self, data: bytes) -> None:
        if not self.closed:
            self.transport.write(data)

    def unsent(self) -> int:
        return self.transport.get_write_buffer_size() if self.transport and not self.closed else 0

    def pause_reading(self, paused: bool) -> None:
        if self.closed or paused == self.paused:
            return
        self.paused = paused
        if paused:
            self.transport.pause_reading()
        else:
            self.transport.resume_reading()

    def abort(self, why: str, loud: bool = False) -> None:
        if not self.closed:
            if self.authenticated or loud:
                log.warning("closing connection %s: %s", self.name, why)
            else:  # anyone can open connections: their refusals are logged at a bounded rate
                REFUSALS.warning("refused connection %s: %s", self.name, why)
            self.closed = True
            self._handshake_over()
            self.transport.abort()
            self._report_lost()

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.transport.close()


# Kernel buffers per socket. Linux autotunes loopback receive buffers up to
# net.ipv4.tcp_rmem's maximum (32 MiB here): seconds of tuples queued out of
# sight of the stream manager's water marks. Fixed sizes keep backpressure, not
# buffering, in charge of latency, and they are small because Python moves
# only a few MB/s of tuples per connection: Linux doubles the figures, so at
# 256 KiB each a hop (send buffer + receive buffer) held ~1 MiB, ~25k sentences
# of the word-count benchmark, 0.2-0.5 s at saturation on every hop. The send
# side (where the stream manager's writes leave its measured buffers) is the
# smaller; the receive side stays at 64 KiB because a receive window under the
# loopback MSS (~64 KiB) stalls TCP (16 KiB buffers: 10k words/s instead of 400k).
SEND_BUFFER_BYTES = 32 * 1024
RECEIVE_BUFFER_BYTES = 64 * 1024


def bound_buffers(sock: socket.socket) -> socket.socket:
    """Fix the socket's kernel send/receive buffers (accepted sockets inherit them)."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER_BYTES)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RECEIVE_BUFFER_BYTES)
    return sock


def listen_socket(host: str, port: int = 0) -> socket.socket:
    sock = bound_buffers(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    return sock
