"""Scaling down without losing tuples: a task that leaves the physical plan keeps
its route until it is gone, and an instance drains its socket on SIGTERM."""
import json
import signal
import subprocess
import sys
import time

import msgpack

from squall.idl import schema
from squall.loader import load_topology_file
from squall.runtime.protocol import (BlockingConnection, check_hello, control_frame, data_frame,
                                     frame_dest, listen_socket, make_challenge)
from squall.runtime.stmgr import StreamManager
from squall.runtime.testing import hand_packing, state_file, write_state
from squall.topology import encode_config


class FakeConn:
    def __init__(self, tag):
        self.tag, self.written, self.closed, self.authenticated = tag, [], False, True

    def write(self, data):
        self.written.append(data)

    def close(self):
        self.closed = True

    def pause_reading(self, paused):
        pass

    def unsent(self):
        return 0


class FakeLink:
    def __init__(self, container):
        self.container, self.host, self.port = container, "h", 1000 + container
        self.conn, self.sent = FakeConn(("peer_out", container)), []
        self.buffered, self.closed, self.retiring = 0, False, False

    def send(self, data):
        self.sent.append(data)


def pplan(placement, plan_id):
    """placement: task -> container (components: task 1 is the split, the rest counts)."""
    containers = sorted(set(placement.values()))
    return schema.PhysicalPlan(
        topology_name="t", packing_plan_id=plan_id, status=schema.TopologyStatus.RUNNING, tmaster=None,
        stmgrs=[schema.StMgrLocation(container=c, host="h", data_port=1000 + c, pid=c) for c in containers],
        instances=[schema.InstanceLocation(id=schema.InstanceId("split" if t == 1 else "count", t, -1),
                                           container=c, pid=100 + t) for t, c in sorted(placement.items())])


def test_a_task_that_left_the_plan_keeps_its_route_until_it_is_gone():
    sm = StreamManager("t", "s", 1, "h", spouts=set(), high_bytes=1 << 20, low_bytes=1 << 19, max_frame=1 << 20)
    split, local_count = FakeConn(("instance", 1, "split", 101)), FakeConn(("instance", 3, "count", 103))
    sm.local = {1: split, 3: local_count}
    sm.set_plan(pplan({1: 1, 2: 2, 3: 1, 4: 2}, "old"))
    sm.peers = {2: FakeLink(2)}  # the link set_plan opened, without sockets
    sm.set_plan(pplan({1: 1, 2: 2}, "new"))  # scaled down: counts 3 (local) and 4 (container 2) leave

    # a batch the split made with the old plan reaches the stream manager after the new plan
    sm.route(data_frame(3, b"x"))
    sm.route(data_frame(4, b"y"))
    assert [frame_dest(f) for f in local_count.written if f[4] == 3] == [3]
    assert [frame_dest(f) for f in sm.peers[2].sent] == [4]
    assert sm.dropped_frames == 0

    # once the local task is gone its route goes; the remote one expires
    local_count.closed = True
    sm.lost(local_count)
    assert 3 not in sm.local and 3 not in sm.stale
    sm.route(data_frame(3, b"x"))
    assert sm.dropped_frames == 1
    sm.expire_stale(time.monotonic() + sm.stale_secs + 1)
    assert sm.stale == {} and 2 in sm.peers  # container 2 is still in the plan: its link stays


def test_the_link_to_a_container_that_left_stays_while_its_tasks_may_receive():
    sm = StreamManager("t", "s", 1, "h", spouts=set(), high_bytes=1 << 20, low_bytes=1 << 19, max_frame=1 << 20)
    sm.local = {1: FakeConn(("instance", 1, "split", 101))}
    sm.set_plan(pplan({1: 1, 2: 1, 3: 2}, "old"))
    link = sm.peers[2] = FakeLink(2)
    sm.set_plan(pplan({1: 1, 2: 1}, "new"))  # container 2 (task 3) leaves
    assert sm.peers.get(2) is link and link.retiring and not link.conn.closed
    sm.route(data_frame(3, b"z"))
    assert [frame_dest(f) for f in link.sent] == [3]
    sm.lost(link.conn)  # its stream manager exits: link and routes go, no reconnecting
    assert 2 not in sm.peers and sm.stale == {} and link.closed


def test_instance_processes_what_is_in_its_socket_at_sigterm(tmp_path, topo_path):
    """SIGTERM while the bolt is busy: frames already in (or still reaching) its socket are processed."""
    plan = load_topology_file(topo_path("rt_drain.py")).plan
    out = tmp_path / "out"
    out.mkdir()
    plan.overrides = encode_config({"rt.out.dir": str(out), "rt.delay.secs": 0.05}, "test")
    packing = hand_packing(plan, 1)
    root, run_dir = str(tmp_path / "state"), str(tmp_path / "run")
    execution = write_state(root, run_dir, plan, packing)
    tasks = {i.id.component: i.id.task_id for c in packing.containers for i in c.instances}

    listener = listen_socket("127.0.0.1")
    launch = tmp_path / "launch.json"
    launch.write_text(json.dumps({"stmgr_port": listener.getsockname()[1]}))
    log = open(tmp_path / "instance.log", "wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "squall.runtime.process", "--topology", plan.name, "--container", "1",
         "--state", state_file(run_dir), "--role", "instance", "--task", str(tasks["sink"]),
         "--launch", str(launch)], stdout=log, stderr=subprocess.STDOUT)
    try:
        listener.settimeout(30)
        sock, _ = listener.accept()
        conn = BlockingConnection(sock)
        nonce, challenge = make_challenge(plan.name)
        sock.sendall(challenge)
        check_hello(conn.recv_frame(10), plan.name, execution.secret, nonce)
        sock.sendall(control_frame(physical_plan=schema.PhysicalPlan(
            topology_name=plan.name, packing_plan_id=packing.id, status=schema.TopologyStatus.RUNNING,
            tmaster=schema.TMasterLocation(topology_name=plan.name, host="127.0.0.1", control_port=1, pid=1,
                                           run_id="r"),
            stmgrs=[schema.StMgrLocation(container=1, host="127.0.0.1", data_port=1, pid=1)],
            instances=[schema.InstanceLocation(id=i.id, container=1, pid=1)
                       for c in packing.containers for i in c.instances])))

        def batch(numbers):
            return data_frame(tasks["sink"], msgpack.packb([tasks["quiet"], [["default", [[n] for n in numbers]]]]))

        sock.sendall(batch(range(0, 10)))  # 0.5 s of work
        time.sleep(0.15)  # the bolt is inside that batch now
        sock.sendall(b"".join(batch([n]) for n in range(10, 15)))  # these wait in its socket
        proc.send_signal(signal.SIGTERM)
        time.sleep(0.05)
        sock.sendall(batch([15]))  # and this one was on its way when SIGTERM came
        assert proc.wait(timeout=10) == 0
        assert json.loads((out / f"sink-{tasks['sink']}.json").read_text()) == list(range(16))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        listener.close()
        log.close()
    assert "drained its input" in (tmp_path / "instance.log").read_text()
