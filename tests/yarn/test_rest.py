"""ResourceManager REST documents, shaped as Hadoop's ResourceManager REST documentation shows them,
parsed into reports, served over real HTTP, and turned into Squall's view of the cluster."""
import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from squall.conf import base_config
from squall.yarn.errors import YarnError
from squall.yarn.rest import RMClient, parse_apps, parse_metrics, parse_nodes, parse_scheduler
from squall.yarn.view import SquallContainer, build_view, moves

METRICS = {"clusterMetrics": {
    "appsSubmitted": 12, "appsCompleted": 9, "appsPending": 0, "appsRunning": 3, "appsFailed": 0, "appsKilled": 0,
    "reservedMB": 0, "availableMB": 20480, "allocatedMB": 12288, "reservedVirtualCores": 0,
    "availableVirtualCores": 10, "allocatedVirtualCores": 6, "containersAllocated": 6, "containersReserved": 0,
    "containersPending": 0, "totalMB": 32768, "totalVirtualCores": 16, "totalNodes": 2, "lostNodes": 0,
    "unhealthyNodes": 0, "decommissionedNodes": 0, "rebootedNodes": 0, "activeNodes": 2}}

NODES = {"nodes": {"node": [
    {"rack": "/default-rack", "state": "RUNNING", "id": "worker1:45454", "nodeHostName": "worker1",
     "nodeHTTPAddress": "worker1:8042", "lastHealthUpdate": 1700000000000, "version": "3.3.6", "healthReport": "",
     "numContainers": 4, "usedMemoryMB": 10240, "availMemoryMB": 6144, "usedVirtualCores": 5,
     "availableVirtualCores": 3, "nodeLabels": ["stream"],
     "resourceUtilization": {"nodePhysicalMemoryMB": 15000, "nodeVirtualMemoryMB": 20000, "nodeCPUUsage": 7.6,
                             "aggregatedContainersPhysicalMemoryMB": 9000, "aggregatedContainersVirtualMemoryMB": 12000,
                             "containersCPUUsage": 6.9}},
    {"rack": "/default-rack", "state": "RUNNING", "id": "worker2:45454", "nodeHostName": "worker2",
     "nodeHTTPAddress": "worker2:8042", "lastHealthUpdate": 1700000000000, "version": "3.3.6", "healthReport": "",
     "numContainers": 2, "usedMemoryMB": 2048, "availMemoryMB": 14336, "usedVirtualCores": 1,
     "availableVirtualCores": 7,
     "resourceUtilization": {"nodePhysicalMemoryMB": 3000, "nodeVirtualMemoryMB": 4000, "nodeCPUUsage": 0.8,
                             "aggregatedContainersPhysicalMemoryMB": 1500, "aggregatedContainersVirtualMemoryMB": 2000,
                             "containersCPUUsage": 0.5}},
]}}

CAPACITY = {"scheduler": {"schedulerInfo": {
    "type": "capacityScheduler", "capacity": 100.0, "usedCapacity": 37.5, "maxCapacity": 100.0, "queueName": "root",
    "queues": {"queue": [
        {"type": "capacitySchedulerLeafQueueInfo", "capacity": 60.0, "usedCapacity": 50.0, "maxCapacity": 100.0,
         "absoluteCapacity": 60.0, "absoluteMaxCapacity": 100.0, "absoluteUsedCapacity": 30.0, "numApplications": 2,
         "queueName": "spark", "state": "RUNNING", "resourcesUsed": {"memory": 10240, "vCores": 5}},
        {"capacity": 40.0, "usedCapacity": 15.6, "maxCapacity": 60.0, "absoluteCapacity": 40.0,
         "absoluteMaxCapacity": 60.0, "absoluteUsedCapacity": 6.25, "numApplications": 1, "queueName": "streaming",
         "state": "RUNNING", "resourcesUsed": {"memory": 2048, "vCores": 1},
         "queues": {"queue": [
             {"type": "capacitySchedulerLeafQueueInfo", "capacity": 100.0, "usedCapacity": 15.6,
              "maxCapacity": 100.0, "absoluteCapacity": 40.0, "absoluteMaxCapacity": 60.0,
              "absoluteUsedCapacity": 6.25, "queueName": "squall", "state": "RUNNING",
              "resourcesUsed": {"memory": 2048, "vCores": 1}}]}},
    ]}}}}

FAIR = {"scheduler": {"schedulerInfo": {"type": "fairScheduler", "rootQueue": {
    "maxApps": 2147483647, "minResources": {"memory": 0, "vCores": 0},
    "maxResources": {"memory": 32768, "vCores": 16}, "usedResources": {"memory": 12288, "vCores": 6},
    "fairResources": {"memory": 32768, "vCores": 16}, "clusterResources": {"memory": 32768, "vCores": 16},
    "queueName": "root", "schedulingPolicy": "fair",
    "childQueues": {"queue": [
        {"type": "fairSchedulerLeafQueueInfo", "maxApps": 10, "minResources": {"memory": 8192, "vCores": 4},
         "maxResources": {"memory": 32768, "vCores": 16}, "usedResources": {"memory": 10240, "vCores": 5},
         "fairResources": {"memory": 16384, "vCores": 8}, "clusterResources": {"memory": 32768, "vCores": 16},
         "queueName": "root.spark", "schedulingPolicy": "fair", "numPendingApps": 0, "numActiveApps": 2},
        {"type": "fairSchedulerLeafQueueInfo", "maxApps": 10, "minResources": {"memory": 4096, "vCores": 2},
         "maxResources": {"memory": 16384, "vCores": 8}, "usedResources": {"memory": 2048, "vCores": 1},
         "fairResources": {"memory": 16384, "vCores": 8}, "clusterResources": {"memory": 32768, "vCores": 16},
         "queueName": "root.streaming", "schedulingPolicy": "fair", "numPendingApps": 0, "numActiveApps": 1},
    ]}}}}}

APPS = {"apps": {"app": [
    {"id": "application_1700000000000_0007", "user": "etl", "name": "nightly-join", "queue": "spark",
     "state": "RUNNING", "finalStatus": "UNDEFINED", "progress": 40.0, "trackingUI": "ApplicationMaster",
     "trackingUrl": "http://rm:8088/proxy/application_1700000000000_0007/", "applicationType": "SPARK",
     "applicationTags": "", "allocatedMB": 9216, "allocatedVCores": 4, "runningContainers": 3},
    {"id": "application_1700000000000_0009", "user": "ops", "name": "wc", "queue": "streaming", "state": "RUNNING",
     "finalStatus": "UNDEFINED", "progress": 10.0, "trackingUI": "ApplicationMaster",
     "trackingUrl": "http://rm:8088/proxy/application_1700000000000_0009/", "applicationType": "skein",
     "applicationTags": "squall,wc", "allocatedMB": 2048, "allocatedVCores": 1, "runningContainers": 2},
    {"id": "application_1700000000000_0010", "user": "bi", "name": "hive", "queue": "spark", "state": "RUNNING",
     "finalStatus": "UNDEFINED", "progress": 5.0, "trackingUI": "ApplicationMaster", "trackingUrl": "",
     "applicationType": "MAPREDUCE", "applicationTags": "", "allocatedMB": 1024, "allocatedVCores": 1,
     "runningContainers": 1},
]}}


def test_metrics_nodes_and_apps():
    m = parse_metrics(METRICS)
    assert (m.total_mb, m.allocated_mb, m.available_mb, m.total_vcores, m.active_nodes, m.apps_running) == (
        32768, 12288, 20480, 16, 2, 3)
    n1, n2 = parse_nodes(NODES)
    assert (n1.host, n1.capacity_mb, n1.capacity_vcores, n1.used_mb, n1.labels) == ("worker1", 16384, 8, 10240,
                                                                                   ("stream",))
    assert (n1.measured_cpu, n1.measured_mb) == (7.6, 15000.0)
    apps = parse_apps(APPS)
    assert [(a.owner, a.allocated_mb) for a in apps] == [("spark", 9216), ("squall", 2048), ("other", 1024)]
    assert apps[1].tags == ("squall", "wc")
    assert parse_apps({"apps": None}) == []


def test_capacity_scheduler_queues_nest():
    queues = {q.name: q for q in parse_scheduler(CAPACITY)}
    assert list(queues) == ["root", "root.spark", "root.streaming", "root.streaming.squall"]
    s = queues["root.streaming"]
    assert (s.capacity, s.max_capacity, s.absolute_capacity, s.used_mb, s.children) == (
        40.0, 60.0, 40.0, 2048, ("root.streaming.squall",))


def test_fair_scheduler_queues_as_shares_of_the_cluster():
    queues = {q.name: q for q in parse_scheduler(FAIR)}
    assert list(queues) == ["root", "root.spark", "root.streaming"]
    spark = queues["root.spark"]
    assert (spark.kind, spark.absolute_capacity, spark.used_capacity, spark.absolute_used) == (
        "fairScheduler", 50.0, 62.5, 31.25)


def test_unknown_scheduler_is_refused():
    with pytest.raises(YarnError, match="capacity and fair"):
        parse_scheduler({"scheduler": {"schedulerInfo": {"type": "fifoScheduler"}}})


def test_view_splits_allocation_and_finds_the_overdrawn_node():
    containers = [SquallContainer("wc", 0, "worker2", 1024, 1), SquallContainer("wc", 1, "worker1", 1024, 1),
                  SquallContainer("wc", 2, "worker1", 2048, 2)]
    view = build_view(parse_nodes(NODES), parse_scheduler(CAPACITY), parse_apps(APPS), containers, base_config())
    w1, w2 = view.node("worker1"), view.node("worker2")
    assert (w1.squall.cpu, w1.squall.ram_mb) == (3, 3072)
    assert view.by_owner["spark"].ram_mb == 9216 and view.by_owner["squall"].ram_mb == 2048
    # worker1: 7.6 of 8 vcores busy (above the 0.9 high mark): overloaded, Squall's pool there is negative
    assert w1.over() and w1.pool.overloaded and w1.balance().cpu < 0
    assert not w2.over() and w2.pool.free().ram_mb > 0
    assert [(c.container, c.host) for c in moves(view, containers)] == [(2, "worker1"), (1, "worker1")]


class _RM(BaseHTTPRequestHandler):
    documents = {"/ws/v1/cluster/metrics": METRICS, "/ws/v1/cluster/nodes": NODES,
                 "/ws/v1/cluster/scheduler": CAPACITY, "/ws/v1/cluster/apps?states=RUNNING": APPS}

    def do_GET(self):
        doc = self.documents.get(self.path)
        body = json.dumps(doc).encode()
        self.send_response(200 if doc is not None else 404)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def rm_server():
    server = HTTPServer(("127.0.0.1", 0), _RM)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_client_fails_over_to_the_answering_resource_manager(rm_server):
    import socket

    dead = socket.socket()
    dead.bind(("127.0.0.1", 0))  # bound, never listening: connections are refused
    rm = RMClient([f"http://127.0.0.1:{dead.getsockname()[1]}", rm_server], timeout=5)
    assert rm.metrics().active_nodes == 2
    assert [n.host for n in rm.nodes()] == ["worker1", "worker2"]
    assert len(rm.apps()) == 3
    with pytest.raises(YarnError, match=r"HTTP 404"):
        rm.get("nowhere")
    dead.close()


def test_cluster_command_prints_nodes_owners_and_queues(rm_server, tmp_path, monkeypatch, capsys):
    from squall.cli import main

    monkeypatch.setenv("SQUALL_HOME", str(tmp_path))
    cfg = tmp_path / "cluster.yaml"
    cfg.write_text(f"squall.yarn.rm.url: {rm_server}\n")
    assert main(["cluster", "--json", "--config-path", str(cfg)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [(n["host"], n["state"]) for n in data["nodes"]] == [("worker1", "overloaded"), ("worker2", "ok")]
    assert data["allocated_by"]["spark"] == {"vcores": 4, "mb": 9216}
    assert [q["queue"] for q in data["queues"]][:2] == ["root", "root.spark"]
    assert main(["cluster", "--config-path", str(cfg)]) == 0
    assert "root.streaming.squall" in capsys.readouterr().out


def test_an_update_beyond_the_queues_headroom_is_refused_before_anything_changes(rm_server, tmp_path):
    from packing_helpers import comp, topo

    from squall.idl import schema
    from squall.packing import pack, repack
    from squall.packing.repack import with_parallelism
    from squall.scheduler.base import SchedulerError
    from squall.state import Kind, LocalStateManager
    from squall.yarn.rest import find_queue, queue_headroom
    from squall.yarn.scheduler import YarnScheduler
    from squall.yarn.spec import service_shapes, services_of

    queues = parse_scheduler(CAPACITY)
    # root.streaming.squall may grow to 60 % of the cluster: 19,660 MB and 9 vcores, less what it uses
    assert queue_headroom(find_queue(queues, "squall"), parse_metrics(METRICS)) == (17612, 8)
    assert find_queue(queues, "streaming.squall") == find_queue(queues, "squall")
    fair = find_queue(parse_scheduler(FAIR), "streaming")
    assert queue_headroom(fair, parse_metrics(METRICS)) == (14336, 7)  # maxResources 16,384 MB, 8 vcores

    t = topo([comp("spout", 2, cpu=1.0, ram=512), comp("sink", 2, cpu=1.0, ram=512, inputs=["spout"])],
             {"squall.yarn.rm.url": rm_server, "squall.yarn.queue": "squall", "squall.yarn.min.allocation.mb": 512})
    plan = pack(t, granularity="task")
    state = LocalStateManager(str(tmp_path / "state"))
    state.put(Kind.TOPOLOGY, "t", t)
    state.put(Kind.SCHEDULER, "t", schema.SchedulerLocation(
        topology_name="t", scheduler="yarn", host="h", executor_pids={},
        services=services_of(service_shapes(plan, dict(base_config())))))
    execution = schema.ExecutionState(topology_name="t", run_id="r", run_dir=str(tmp_path), submit_time=0.0,
                                      submitter="u", status=schema.TopologyStatus.RUNNING, secret="s", cluster="yarn")
    scheduler = YarnScheduler(state)
    assert scheduler.headroom(execution) == (17612, 8)

    def proposed(sinks: int) -> schema.PackingPlan:  # as the update plans it: repacked, fitted to YARN
        scaled = with_parallelism(t, {"sink": sinks})
        return scheduler.fit_update(execution, scaled, plan, repack(t, plan, {"sink": sinks})[0], None)

    scheduler.check_update(execution, plan, proposed(4))  # two more vcores: granted
    with pytest.raises(SchedulerError, match=r"queue 'squall' can be granted 17612 MB and 8 vcores now"):
        scheduler.check_update(execution, plan, proposed(20))
