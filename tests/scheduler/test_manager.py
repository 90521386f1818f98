"""``scheduler/manager.py`` against a real local state manager holding a real topology's records (no process
runs: the topology master's and the supervisor's parts are written by the test)."""
import os

import pytest
from scheduler_plans import confirm, recorded

from squall.conf import base_config
from squall.errors import SquallError
from squall.idl import schema
from squall.scheduler import manager
from squall.scheduler.changes import TopologyUpdate
from squall.state import Kind


def test_running_names_the_running_topologies(state, tmp_path):
    with pytest.raises(manager.NotRunning, match=r"no topology named 'word_count' is running \(none is running\)"):
        manager.running(state, "word_count")
    execution = recorded(state, str(tmp_path))
    assert manager.running(state, "word_count") == execution
    with pytest.raises(manager.NotRunning, match=r"no topology named 'wc' is running \(running: word_count\)"):
        manager.running(state, "wc")


def test_a_topology_being_changed_refuses_a_second_command(state, tmp_path):
    recorded(state, str(tmp_path))
    state.create(Kind.LOCK, "word_count", b"another command")
    with pytest.raises(SquallError, match="topology 'word_count' is being changed by another command; try again"):
        manager.kill(state, "word_count")
    assert state.get(Kind.EXECUTION_STATE, "word_count") is not None  # nothing was done
    state.delete(Kind.LOCK, "word_count")


def test_kill_removes_every_record_and_keeps_the_run_folder(state, tmp_path):
    run_dir = tmp_path / "run"
    (run_dir / "logs").mkdir(parents=True)
    execution = recorded(state, str(run_dir))
    confirm(state, "word_count", schema.TopologyStatus.RUNNING)
    assert manager.kill(state, "word_count") == execution
    for kind in (Kind.TOPOLOGY, Kind.PACKING_PLAN, Kind.PHYSICAL_PLAN, Kind.EXECUTION_STATE, Kind.LOCK):
        assert state.get(kind, "word_count") is None, kind
    assert os.path.isdir(run_dir / "logs")
    with pytest.raises(manager.NotRunning):
        manager.kill(state, "word_count")


def test_set_status_records_the_wish_and_waits_for_the_master(state, tmp_path):
    recorded(state, str(tmp_path))
    assert not manager.set_status(state, "word_count", schema.TopologyStatus.PAUSED, timeout=0.3)
    assert state.get(Kind.EXECUTION_STATE, "word_count").status == schema.TopologyStatus.PAUSED
    assert state.get(Kind.LOCK, "word_count") is None
    confirm(state, "word_count", schema.TopologyStatus.PAUSED)
    assert manager.set_status(state, "word_count", schema.TopologyStatus.PAUSED, timeout=5.0)


def test_wait_up_names_what_it_still_waits_for(state, tmp_path):
    recorded(state, str(tmp_path))
    with pytest.raises(SquallError, match=r"topology 'word_count' is \w+ 0s after the test: .*container 0: its "
                                          r"executor is not running"):
        manager.wait_up(state, "word_count", 0.0, "the test")


def test_plan_writes_nothing(state, tmp_path):
    recorded(state, str(tmp_path))
    before = state.get(Kind.PACKING_PLAN, "word_count")
    planned = manager.plan(state, "word_count", TopologyUpdate(parallelism={"count": 3}), base_config())
    assert planned.changed and planned.current == before
    assert sum(len(c.instances) for c in planned.proposed.containers) == 6
    assert state.get(Kind.PACKING_PLAN, "word_count") == before
    assert state.get(Kind.TOPOLOGY, "word_count").components[2].parallelism == 2


def test_restart_of_a_container_the_topology_lacks_is_refused(state, tmp_path):
    recorded(state, str(tmp_path))
    with pytest.raises(SquallError, match=r"topology 'word_count' has no container 7"):
        manager.restart(state, "word_count", 7, timeout=1.0)
    assert state.get(Kind.LOCK, "word_count") is None  # the lock is released on the way out
