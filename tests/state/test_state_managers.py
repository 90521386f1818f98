"""Both state managers, local directory and ZooKeeper, against real files,
a real ZooKeeper server and real processes."""
import os
import subprocess
import sys
import threading
import time

import pytest

from squall.idl import schema
from squall.state import AlreadyExists, Kind, LocalStateManager, StateError
from squall.state.zookeeper import ZooKeeperStateManager

from state_helpers import make_manager

from squall.testing import wait_until


def location(pid):
    return schema.TMasterLocation(topology_name="t", host="h", control_port=1, pid=pid, run_id="r")


# DESIGN.md's layout, and checkpoints/ (docs/state.md: the complete checkpoints of a topology that checkpoints),
# debug/ and files/ (docs/debugging.md: log levels and sampling; the shipped files in force)
LAYOUT = sorted(["topologies", "packingplans", "pplans", "executionstate", "tmasters", "schedulers", "locks",
                 "containers", "elections", "checkpoints", "health", "healthmgrs", "debug", "files"])


def test_layout_follows_the_design(state, tmp_path):
    if isinstance(state, LocalStateManager):
        assert sorted(os.listdir(tmp_path / "state")) == LAYOUT
    else:
        assert sorted(state.client.get_children(state.root)) == LAYOUT


def test_put_get_delete_round_trip(state):
    plan = schema.PackingPlan(id="p1", containers=[], algorithm="ffd", granularity="task")
    assert state.get(Kind.PACKING_PLAN, "t") is None
    state.put(Kind.PACKING_PLAN, "t", plan)
    assert state.get(Kind.PACKING_PLAN, "t") == plan
    assert state.names(Kind.PACKING_PLAN) == ["t"]
    state.delete(Kind.PACKING_PLAN, "t")
    state.delete(Kind.PACKING_PLAN, "t")  # idempotent
    assert state.get(Kind.PACKING_PLAN, "t") is None and state.names(Kind.PACKING_PLAN) == []


def test_create_refuses_an_existing_record(state):
    state.create(Kind.LOCK, "t", b"me")
    with pytest.raises(AlreadyExists, match="locks/t already exists"):
        state.create(Kind.LOCK, "t", b"you")
    assert state.get(Kind.LOCK, "t") == b"me"


def test_corrupt_record_names_its_path(state, tmp_path):
    if isinstance(state, LocalStateManager):
        with open(tmp_path / "state" / "packingplans" / "t", "wb") as f:
            f.write(b"\xff\x00garbage")
    else:
        state.client.create(f"{state.root}/packingplans/t", b"\xff\x00garbage")
    with pytest.raises(StateError, match=r"packingplans/t is corrupt"):
        state.get(Kind.PACKING_PLAN, "t")


def test_ephemeral_record_vanishes_with_its_process(state, manager_args):
    code = (
        "import sys\nfrom state_helpers import make_manager\n"
        "from squall.state import Kind\nfrom squall.idl import schema\nimport pathlib\n"
        "s = make_manager(%r, pathlib.Path(%r), %r, %r); s.start()\n"
        "s.create(Kind.TMASTER, 't', schema.TMasterLocation('t', 'h', 1, 0, 'r'))\n"
        "print('ready', flush=True); sys.stdin.readline()\n"
    ) % tuple(str(a) if a is not None else None for a in manager_args)
    child = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                             env={**os.environ, "PYTHONPATH": os.path.dirname(os.path.abspath(__file__))})
    assert child.stdout.readline().strip() == "ready"
    assert state.get(Kind.TMASTER, "t") is not None
    with pytest.raises(AlreadyExists):
        state.create(Kind.TMASTER, "t", location(os.getpid()))  # a live owner: stand by
    child.kill()  # no clean close: ZooKeeper notices when the session times out
    child.wait()
    wait_until(lambda: state.get(Kind.TMASTER, "t") is None, timeout=15, what="state.get(Kind.TMASTER, 't') is None", interval=0.02)
    assert state.names(Kind.TMASTER) == []
    state.create(Kind.TMASTER, "t", location(os.getpid()))  # the standby takes over
    assert state.get(Kind.TMASTER, "t").pid == os.getpid()


def test_close_removes_own_ephemeral_records(state, manager_args):
    s = make_manager(*manager_args)
    s.start()
    s.create(Kind.TMASTER, "t", location(os.getpid()))
    s.create(Kind.LOCK, "t", b"mine")
    s.close()
    wait_until(lambda: state.get(Kind.TMASTER, "t") is None and state.get(Kind.LOCK, "t") is None, timeout=15, what="state.get(Kind.TMASTER, 't') is None and state.get(Kind.LOCK, 't') is None", interval=0.02)


def test_watch_reports_changes_and_deletion(state):
    seen = []
    changed = threading.Event()

    def on_change(value):
        seen.append(value)
        changed.set()

    cancel = state.watch(Kind.EXECUTION_STATE, "t", on_change)
    record = schema.ExecutionState("t", "r", "/d", 1.0, "me", schema.TopologyStatus.RUNNING, "s", "local", "py")
    state.put(Kind.EXECUTION_STATE, "t", record)
    assert changed.wait(5)
    changed.clear()
    state.delete(Kind.EXECUTION_STATE, "t")
    assert changed.wait(5)
    assert seen == [record, None]
    cancel()
    state.put(Kind.EXECUTION_STATE, "t", record)
    time.sleep(0.5)
    assert len(seen) == 2


def test_bad_names_are_refused(state):
    with pytest.raises(StateError, match="invalid state record name '../x'"):
        state.get(Kind.TOPOLOGY, "../x")


def test_zookeeper_unreachable_names_the_address():
    from squall.state.zkserver import free_port

    hosts = f"127.0.0.1:{free_port()}"
    manager = ZooKeeperStateManager(hosts, connect_timeout=1.0)
    with pytest.raises(StateError, match=f"cannot connect to ZooKeeper at {hosts} within 1s"):
        manager.start()


def test_zookeeper_outage_is_survived(zookeeper, tmp_path):
    """Records written before a short server outage are read after it; the client reconnects."""
    from squall.state.zkserver import ZooKeeperServer

    server = ZooKeeperServer(data_dir=str(tmp_path / "zk"))
    os.makedirs(server.data_dir)
    server.start()
    try:
        manager = ZooKeeperStateManager(server.hosts, "/outage", session_timeout=10.0)
        manager.start()
        plan = schema.PackingPlan(id="p", containers=[], algorithm="ffd", granularity="task")
        manager.put(Kind.PACKING_PLAN, "t", plan)
        server.stop()
        time.sleep(1.0)
        server.start()
        assert manager.get(Kind.PACKING_PLAN, "t") == plan
        manager.close()
    finally:
        server.close()
