"""What a cluster needs of the state: container records, ACLs, leader election,
session loss, against real files, a real ZooKeeper server and real processes."""
import os
import signal
import subprocess
import sys
import threading
import time

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError

from squall.idl import schema
from squall.state import Kind, Session, StateAddress, StateError, member
from squall.state.zkserver import expire_session
from squall.state.zookeeper import ZooKeeperStateManager

from state_helpers import AUTH, make_manager

from squall.testing import wait_until


def container(cid, pid=1):
    return schema.ContainerStatus(container=cid, host="h", executor_pid=pid, updated=0.0, processes=[])


def test_container_records_are_grouped_per_topology(state):
    for topology, cid in (("t", 1), ("t", 2), ("u", 1)):
        state.put(Kind.CONTAINER, member(topology, cid), container(cid, os.getpid()))
    assert state.members(Kind.CONTAINER, "t") == ["1", "2"]
    assert state.get(Kind.CONTAINER, member("t", 2)) == container(2, os.getpid())
    state.delete_topology("t")
    assert state.members(Kind.CONTAINER, "t") == []
    assert state.members(Kind.CONTAINER, "u") == ["1"]
    with pytest.raises(StateError, match="invalid state record name 't'"):
        state.get(Kind.CONTAINER, "t")


def test_election_has_one_leader_at_a_time(manager_args):
    first, second = make_manager(*manager_args), make_manager(*manager_args)
    first.start()
    second.start()
    try:
        a, b = first.election("t", "a"), second.election("t", "b")
        stop = threading.Event()
        assert a.acquire(stop) and a.holds()
        won = []
        waiter = threading.Thread(target=lambda: won.append(b.acquire(stop)))
        waiter.start()
        time.sleep(0.5)
        assert not won and not b.holds(), "two leaders at once"
        a.release()
        assert not a.holds()
        waiter.join(10)
        assert won == [True] and b.holds()
        # a candidate that is told to stop gives up waiting
        again = threading.Thread(target=lambda: won.append(a.acquire(stop)))
        again.start()
        time.sleep(0.3)
        stop.set()
        again.join(10)
        assert won == [True, False] and not a.holds() and b.holds()
    finally:
        first.close()
        second.close()


CANDIDATE = """
import sys, time, threading
from state_helpers import make_manager
import pathlib
s = make_manager(%r, pathlib.Path(%r), %r, %r); s.start()
e = s.election("t", "child")
assert e.acquire(threading.Event())
print("leading", flush=True)
out = open(%r, "a")
while True:  # what this process believes, every 10 ms
    out.write("%%.4f %%d\\n" %% (time.time(), e.holds())); out.flush()
    time.sleep(0.01)
"""


def _candidate(manager_args, samples):
    code = CANDIDATE % (tuple(str(a) if a is not None else None for a in manager_args) + (str(samples),))
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                             env={**os.environ, "PYTHONPATH": os.path.dirname(os.path.abspath(__file__))})
    assert child.stdout.readline().strip() == "leading"
    return child


def test_standby_takes_over_when_the_leader_dies(manager_args, tmp_path):
    child = _candidate(manager_args, tmp_path / "samples")
    standby = make_manager(*manager_args)
    standby.start()
    try:
        election = standby.election("t", "standby")
        won = []
        waiter = threading.Thread(target=lambda: won.append(election.acquire(threading.Event())))
        waiter.start()
        time.sleep(0.5)
        assert not won
        child.kill()
        child.wait()
        waiter.join(15)  # local: at once; ZooKeeper: once the dead leader's session times out (2 s)
        assert won == [True] and election.holds()
    finally:
        child.kill()
        standby.close()


def test_a_frozen_leader_stops_leading_before_the_standby_starts(zookeeper, tmp_path):
    """SIGSTOP the leader past its session timeout: its session expires for real and the standby
    takes over. When the leader runs again, its very first look at ``holds()`` says no: the lease
    ran out while it was frozen, whatever kazoo's thread has noticed by then."""
    args = ("zookeeper", tmp_path, zookeeper.hosts, "/frozen")
    samples = tmp_path / "samples"
    child = _candidate(args, samples)
    standby = make_manager(*args)
    standby.start()
    try:
        election = standby.election("t", "standby")
        acquired = []
        waiter = threading.Thread(target=lambda: acquired.append((election.acquire(threading.Event()), time.time())))
        waiter.start()
        wait_until(lambda: samples.exists() and samples.read_text().strip().endswith(" 1"), timeout=15, what="samples.exists() and samples.read_text().strip().endswith(' 1')", interval=0.02)
        child.send_signal(signal.SIGSTOP)
        stopped_at = time.time()
        waiter.join(20)
        assert acquired and acquired[0][0], "the standby did not take over"
        took_over = acquired[0][1]
        child.send_signal(signal.SIGCONT)
        time.sleep(1.0)
        lines = [line.split() for line in samples.read_text().splitlines()]
        after = [(float(t), h == "1") for t, h in lines if float(t) > stopped_at]
        assert after, "the leader wrote nothing after it was resumed"
        assert not any(holds for t, holds in after), "the resumed leader believed it still led"
        assert all(holds for t, holds in ((float(t), h == "1") for t, h in lines) if t < stopped_at - 0.1)
        assert took_over > stopped_at
    finally:
        child.send_signal(signal.SIGCONT)
        child.kill()
        standby.close()


def test_session_expiry_ends_leadership_before_the_standby_leads(zookeeper):
    """Expire the leader's session for real: it is told (SUSPENDED, then LOST) and stops holding
    before the standby wins; it can compete again in a new session."""
    leader = ZooKeeperStateManager(zookeeper.hosts, "/expiry", session_timeout=4.0, auth=AUTH)
    other = ZooKeeperStateManager(zookeeper.hosts, "/expiry", session_timeout=4.0, auth=AUTH)
    leader.start()
    other.start()
    sessions = []
    leader.add_listener(lambda s: sessions.append((s, time.time())))
    try:
        a, b = leader.election("t", "a"), other.election("t", "b")
        assert a.acquire(threading.Event())
        won = []
        waiter = threading.Thread(target=lambda: won.append((b.acquire(threading.Event()), time.time())))
        waiter.start()
        time.sleep(0.3)
        expire_session(zookeeper.hosts, leader.client.client_id)
        waiter.join(15)
        assert won and won[0][0], "the standby did not take over"
        wait_until(lambda: any(s is Session.LOST for s, _ in sessions), timeout=15, what="any(s is Session.LOST for s, _ in sessions)", interval=0.02)
        first_doubt = min(t for s, t in sessions if s is not Session.CONNECTED)
        assert first_doubt <= won[0][1], "the standby led while the old leader still held"
        assert not a.holds() and b.holds()
        wait_until(lambda: leader.session is Session.CONNECTED, timeout=15, what="leader.session is Session.CONNECTED", interval=0.02)
        b.release()
        assert a.acquire(threading.Event()) and a.holds()
    finally:
        leader.close()
        other.close()


def test_anonymous_and_wrong_credentials_are_refused(zookeeper):
    state = ZooKeeperStateManager(zookeeper.hosts, "/acl", auth=AUTH)
    state.start()
    record = schema.ExecutionState("t", "r", "/d", 1.0, "me", schema.TopologyStatus.RUNNING, "the-secret",
                                   "local", "py")
    state.put(Kind.EXECUTION_STATE, "t", record)
    state.put(Kind.TOPOLOGY, "t", schema.Topology(name="t", components=[], config={}, overrides={}))
    try:
        for auth in (None, [("digest", "squall:wrong")]):
            intruder = KazooClient(hosts=zookeeper.hosts, auth_data=auth)
            intruder.start(timeout=10)
            try:
                for path in ("/acl/executionstate/t", "/acl/topologies/t"):
                    with pytest.raises(NoAuthError):
                        intruder.get(path)
                    with pytest.raises(NoAuthError):
                        intruder.set(path, b"rewritten")
                with pytest.raises(NoAuthError):
                    intruder.create("/acl/topologies/planted", b"x")
                with pytest.raises(NoAuthError):
                    intruder.get_children("/acl/executionstate")
            finally:
                intruder.stop()
                intruder.close()
        assert state.get(Kind.EXECUTION_STATE, "t").secret == "the-secret"
    finally:
        state.close()


def test_zookeeper_address_needs_a_credential(tmp_path):
    config = {"squall.state.manager": "zookeeper", "squall.state.root": "", "squall.state.zookeeper.auth": "",
              "squall.state.zookeeper.connect": "127.0.0.1:1", "squall.state.zookeeper.session.timeout.secs": 5}
    with pytest.raises(StateError, match="squall.state.zookeeper.auth is not set"):
        StateAddress.from_config(config)
    address = StateAddress.from_config({**config, "squall.state.zookeeper.auth": "u:p"})
    path = str(tmp_path / "state.json")
    address.write(path)
    assert os.stat(path).st_mode & 0o777 == 0o600
    assert StateAddress.read(path) == address and address.root == "/squall"
    assert "u:p" not in address.describe()
