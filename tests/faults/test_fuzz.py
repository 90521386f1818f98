"""Fuzz every listening port of a running topology: random, truncated, oversized and slow frames,
wrong handshakes. Every process survives and the topology goes on processing (every id acked).

Traffic goes to loopback only, bounded: a fixed number of connections per port, each a few kB at
most, all closed by the end of the test.
"""
import glob
import json
import os
import random
import socket
import struct
import time

import psutil

from test_reliability import IDS, acked, finish, submit

from e2e_harness import wait_until
from squall.idl import schema
from squall.runtime.protocol import CHALLENGE, HELLO, data_frame, frame, make_hello
from squall.state import Kind

CONNECTIONS_PER_CASE = 6


def ports(cluster, run_dir):
    """Every listening port of the topology: the topology master's, the stream managers', the metrics managers'."""
    processes = json.loads(cluster.squall("show", "reliable", "--json")[0])["processes"]
    found = {f"{p['process'].split(' ')[0]}-{p['container']}": p["port"] for p in processes if p["port"]}
    for path in glob.glob(os.path.join(run_dir, "logs", "container-*", "launch.json")):
        container = os.path.basename(os.path.dirname(path)).split("-")[1]
        with open(path) as f:
            found[f"metricsmgr-{container}"] = json.load(f)["metricsmgr_port"]
    return found


def _open(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.settimeout(5)
    return s


def _challenge(s):
    data = s.recv(4096)
    assert data[4] == CHALLENGE
    return data


def attacks(rng, secret):
    """Functions of a case's connections (``CONNECTIONS_PER_CASE`` sockets to one port); each leaves the sockets
    for the caller to close. A connection closed on us is the point: the others of the case go on."""
    def each(attack):
        def on_every(sockets):
            for s in sockets:
                try:
                    attack(s)
                except OSError:
                    pass  # closed on us: that is the point
        return on_every

    def random_bytes(s):
        s.sendall(rng.randbytes(rng.randint(1, 4000)))

    def oversized(s):
        s.sendall(struct.pack(">IB", rng.randint(5000, 1 << 31), rng.choice([1, 2, 3, 4, 5])) + b"x" * 100)

    def truncated(s):
        f = frame(HELLO, rng.randbytes(200))
        s.sendall(f[:rng.randint(1, len(f) - 1)])

    def slow(sockets):
        """Each connection's first 8 bytes of a hello one at a time, 50 ms apart: the case's connections
        trickle side by side (one after the other, 6 connections took 2.4 s a port)."""
        frames = [(s, frame(HELLO, rng.randbytes(50))[:8]) for s in sockets]
        for i in range(8):
            for s, f in frames:
                try:
                    s.sendall(f[i:i + 1])
                except OSError:
                    pass  # closed on us: that is the point
            time.sleep(0.05)  # pacing the bytes, not placing an event

    def wrong_secret(s):
        s.sendall(make_hello("not-the-secret", _challenge(s), schema.Role.STMGR, 1))

    def other_topology(s):
        challenge = _challenge(s)
        hello = make_hello(secret, challenge, schema.Role.STMGR, 1)
        s.sendall(hello.replace(b"reliable", b"rel1able"))

    def data_first(s):
        s.sendall(data_frame(1, rng.randbytes(100)))

    def proven_then_garbage(s):
        s.sendall(make_hello(secret, _challenge(s), schema.Role.CLIENT, -1))
        s.sendall(rng.randbytes(500))

    return [each(random_bytes), each(oversized), each(truncated), slow, each(wrong_secret), each(other_topology),
            each(data_first), each(proven_then_garbage)]


def test_fuzzing_every_port_disturbs_nothing(cluster, tmp_path):
    out = str(tmp_path / "out")
    os.mkdir(out)
    submit(cluster, out, "faults.rate=200")
    wait_until(lambda: len(acked(out)) > 100, timeout=60, what="ids to be acked")
    shown = json.loads(cluster.squall("show", "reliable", "--json")[0])["processes"]
    before = {p["pid"] for p in shown}
    for p in shown:  # user code holds no listening socket of the topology's daemons
        if p["process"].startswith("instance"):
            held = [c for c in psutil.Process(p["pid"]).net_connections("tcp") if c.status == psutil.CONN_LISTEN]
            assert held == [], f"{p['process']} inherited listening sockets {held}"
    secret = cluster.state().get(Kind.EXECUTION_STATE, "reliable").secret
    rng = random.Random(20261123)
    targets = ports(cluster, cluster.run_dir("reliable"))
    assert len(targets) >= 5, targets  # tmaster, 2 stream managers, 3 metrics managers
    opened = []
    try:
        for name, port in sorted(targets.items()):
            for attack in attacks(rng, secret):
                sockets = [_open(port) for _ in range(CONNECTIONS_PER_CASE)]
                opened += sockets
                attack(sockets)
    finally:
        for s in opened:
            s.close()
    after = {p["pid"] for p in json.loads(cluster.squall("show", "reliable", "--json")[0])["processes"]}
    assert after == before, "a process died or was restarted under fuzzing"
    finish(cluster, out, lambda text: None)
    assert len(acked(out)) == IDS
