"""The local-directory state manager with real files and real processes."""
import os
import subprocess
import sys
import threading

import pytest

from squall.idl import schema
from squall.state import AlreadyExists, Kind, LocalStateManager, StateError


@pytest.fixture
def state(tmp_path):
    s = LocalStateManager(str(tmp_path / "state"), poll_interval=0.05)
    s.start()
    yield s
    s.close()


def location(pid):
    return schema.TMasterLocation(topology_name="t", host="h", control_port=1, pid=pid, run_id="r")


def test_layout_follows_the_design(state, tmp_path):
    assert sorted(os.listdir(tmp_path / "state")) == sorted(
        ["topologies", "packingplans", "pplans", "executionstate", "tmasters", "schedulers", "locks"]
    )


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
    with open(tmp_path / "state" / "packingplans" / "t", "wb") as f:
        f.write(b"\xff\x00garbage")
    with pytest.raises(StateError, match=r"packingplans/t is corrupt"):
        state.get(Kind.PACKING_PLAN, "t")


def test_ephemeral_record_vanishes_with_its_process(state, tmp_path):
    code = (
        "import sys, time; from squall.state import LocalStateManager, Kind; from squall.idl import schema\n"
        f"s = LocalStateManager({str(tmp_path / 'state')!r}); s.start()\n"
        "s.create(Kind.TMASTER, 't', schema.TMasterLocation('t', 'h', 1, 0, 'r'))\n"
        "print('ready', flush=True); sys.stdin.readline()\n"
    )
    child = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "ready"
    assert state.get(Kind.TMASTER, "t") is not None
    with pytest.raises(AlreadyExists):
        state.create(Kind.TMASTER, "t", location(os.getpid()))  # a live owner: stand by
    child.kill()
    child.wait()
    assert state.get(Kind.TMASTER, "t") is None and state.names(Kind.TMASTER) == []
    state.create(Kind.TMASTER, "t", location(os.getpid()))  # the standby takes over
    assert state.get(Kind.TMASTER, "t").pid == os.getpid()


def test_close_removes_own_ephemeral_records(tmp_path):
    s = LocalStateManager(str(tmp_path / "state"))
    s.start()
    s.create(Kind.TMASTER, "t", location(os.getpid()))
    s.close()
    assert s.get(Kind.TMASTER, "t") is None


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
    threading.Event().wait(0.3)
    assert len(seen) == 2


def test_bad_names_are_refused(state):
    with pytest.raises(StateError, match="invalid state record name '../x'"):
        state.get(Kind.TOPOLOGY, "../x")
