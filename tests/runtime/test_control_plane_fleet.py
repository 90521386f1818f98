"""The control plane with 10 simulated containers (squall.testing.control_plane) against real topology-master
processes and a real ZooKeeper: every stream manager gets the whole physical plan, then the plan of an update
written as `squall update` writes it, as a delta; one that connects again holding the plan is not sent it
again; every one registers again with the standby that takes over from a leader that stopped, and gets the
whole plan from it. bench/scale.py measures the same at 100 and 1,000 containers."""
import os
import signal
import subprocess
import uuid

import pytest

from squall.conf import base_config
from squall.packing.pack import pack
from squall.scheduler import manager
from squall.scheduler.changes import TopologyUpdate
from squall.state import Kind, StateAddress
from squall.testing import wait_until
from squall.testing.control_plane import (FAKE_PID, ControlPlaneFleet, scale_topology, tmaster_command,
                                          write_run)

CONTAINERS = 10


@pytest.fixture
def zk_state(zookeeper):
    address = StateAddress("zookeeper", f"/squall-fleet-{uuid.uuid4().hex[:8]}", zookeeper.hosts,
                           f"squall:{uuid.uuid4().hex}")
    state = address.open()
    state.start()
    yield address, state
    state.close()


def whole_plan(pplan, packing):
    """The physical plan places every task of ``packing`` in its container with its (simulated) pid."""
    want = sorted((c.id, i.id.task_id, FAKE_PID + i.id.task_id) for c in packing.containers for i in c.instances)
    have = [(i.container, i.id.task_id, i.pid) for i in pplan.instances]
    return pplan.packing_plan_id == packing.id and have == want and \
        [s.container for s in pplan.stmgrs] == sorted(c.id for c in packing.containers)


def test_ten_containers_get_the_plan_the_update_and_register_again_after_a_failover(zk_state, tmp_path):
    address, state = zk_state
    name = "fleet"
    topology = scale_topology(name, CONTAINERS)
    first = pack(topology)
    execution = write_run(state, address, str(tmp_path / "run"), topology, first)
    logs = [open(tmp_path / f"tmaster-{k}.log", "wb") for k in range(2)]
    tmasters = [subprocess.Popen(tmaster_command(name, str(tmp_path / "run")), stderr=log, stdout=log)
                for log in logs]
    fleet = ControlPlaneFleet(state, name, execution.secret, heartbeat_secs=0.2, bucket_secs=0.2)
    try:
        leader = wait_until(lambda: state.get(Kind.TMASTER, name), 60, "a leading topology master")
        fleet.start()
        wait_until(lambda: fleet.call(lambda: fleet.all_have_plan(first.id)), 60, "the plan at every stream manager")
        sent = fleet.call(lambda: fleet.plans[first.id])
        assert whole_plan(sent, first) and sent.tmaster == leader
        assert fleet.call(lambda: {c: (s.plans, s.registrations, s.connections, len(s.plan_digests), s.refusals)
                                   for c, s in fleet.containers.items()}) == {
            c: ([first.id], 1, 1, 1, []) for c in range(1, CONTAINERS + 1)}

        # one more "count" instance per container, written as `squall update` writes it
        planned = manager.plan(state, name, TopologyUpdate(parallelism={"count": 11 * CONTAINERS}), base_config())
        second = planned.proposed
        state.put(Kind.TOPOLOGY, name, planned.topology)
        state.put(Kind.PACKING_PLAN, name, second)
        wait_until(lambda: fleet.call(lambda: fleet.all_have_plan(second.id)), 60, "the updated plan everywhere")
        assert whole_plan(fleet.call(lambda: fleet.plans[second.id]), second)
        changed = {c.id for c in second.containers} - {
            c.id for c in second.containers for old in first.containers
            if old.id == c.id and {i.id.task_id for i in old.instances} == {i.id.task_id for i in c.instances}}
        assert changed, "the update changed no container's tasks"
        # the change, not the whole plan: every stream manager held the plan before
        assert fleet.call(lambda: {c: (s.plans, s.registrations, s.deltas) for c, s in fleet.containers.items()}) == {
            c.id: ([first.id, second.id], 2 if c.id in changed else 1, 1) for c in second.containers}

        # a stream manager whose connection dropped registers again, saying it holds the plan: not sent again
        fleet.call(lambda: fleet.containers[1].stmgr.close())
        wait_until(lambda: fleet.call(lambda: fleet.containers[1].registrations) == (3 if 1 in changed else 2), 60,
                   "the registration of the stream manager that connected again")

        # the leader stops; the standby leads; every container registers with it and gets its plan
        os.kill(leader.pid, signal.SIGTERM)
        standby = next(p.pid for p in tmasters if p.pid != leader.pid)
        wait_until(lambda: getattr(state.get(Kind.TMASTER, name), "pid", None) == standby, 60, "the standby to lead")
        # (the whole plan: the new leader's versions are not the old one's; container 1 got none on reconnecting)
        wait_until(lambda: fleet.call(lambda: all(s.plans == [first.id, second.id, second.id]
                                                  for s in fleet.containers.values())), 60,
                   "every stream manager's plan from the new leader")
        # once each with the new leader (a container may also have dialled the old one again while it
        # stopped, before the record changed, as a stream manager does)
        assert fleet.call(lambda: {c: (s.with_leader[standby], s.refusals) for c, s in fleet.containers.items()}) == {
            c.id: ([1, 1], []) for c in second.containers}
        new = fleet.call(lambda: fleet.plans[second.id])
        assert whole_plan(new, second) and new.tmaster.pid == standby
    finally:
        fleet.close()
        for p in tmasters:
            p.kill()
            p.wait()
        for log in logs:
            log.close()
        state.delete_topology(name)
