"""Skein application specs built from packing plans: real Skein objects, every algorithm x granularity."""

import pytest
import skein

from squall.conf import base_config
from squall.packing import PackingError, pack, place, tmaster_container_resources, yarn_shapes
from squall.packing.pool import Amount, NodePool
from squall.yarn.environment import PythonEnvironment
from squall.yarn.errors import YarnError
from squall.yarn.scheduler import checked_shapes
from squall.yarn.spec import (TMASTER_SERVICE, build_spec, parse_service, service_shapes, services_of, shape_service,
                              spare_shape)
from squall.yarn.staging import Staged, topology_archive

from packing_helpers import comp, topo

ALGORITHMS = ("roundrobin", "rcrr", "ffd")
GRANULARITIES = ("task", "worker")
STAGED = Staged("/runs/t/1/state.json", "/runs/t/1/yarn/topology.tar.gz")
ENV = PythonEnvironment("/opt/squall/bin/python")


def topology():
    return topo([comp("spout", 3, cpu=0.5, ram=300), comp("split", 5, cpu=0.5, ram=700, inputs=["spout"]),
                 comp("count", 4, cpu=0.3, ram=900, inputs=["split"])], {"topology.workers": 5, "squall.worker.ram.mb": 4096, "squall.worker.cpu": 3})


def config(**overrides):
    c = dict(base_config())
    c.update({"squall.yarn.min.allocation.mb": 512, "squall.yarn.queue": "streaming",
              "squall.yarn.node.label": "stream"})
    c.update(overrides)
    return c


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("granularity", GRANULARITIES)
def test_services_match_the_normalised_plan_exactly(algorithm, granularity):
    cfg = config()
    plan = pack(topology(), algorithm=algorithm, granularity=granularity)
    spec = build_spec("t", plan, cfg, STAGED, ENV)

    expected = {shape_service(s.memory_mb, s.vcores): (s.memory_mb, s.vcores, len(s.containers))
                for s in yarn_shapes(plan, cfg).shapes}
    spare = spare_shape(plan, cfg)  # the largest container's shape, with no container (if not there already)
    expected.setdefault(spare.name, (spare.memory_mb, spare.vcores, 0))
    got = {name: (s.resources.memory, s.resources.vcores, s.instances) for name, s in spec.services.items()
           if name != TMASTER_SERVICE}
    assert got == expected
    assert sum(s.instances for s in spec.services.values()) == len(plan.containers) + 1
    tm = spec.services[TMASTER_SERVICE]
    assert (tm.resources.memory, tm.resources.vcores, tm.instances) == (
        *yarn_shapes(plan, cfg, max_shapes=None, tmaster=tmaster_container_resources(cfg)).by_container[0], 1)
    # every container id belongs to exactly one service, whose shape is that container's
    by_container = yarn_shapes(plan, cfg).by_container
    for cid, service in services_of(service_shapes(plan, cfg)).items():
        if cid:
            assert parse_service(service) == by_container[cid]

    assert skein.ApplicationSpec.from_yaml(spec.to_yaml()) == spec
    spec.to_protobuf()  # Skein validates the whole spec again


def test_application_settings_and_files():
    spec = build_spec("wc", pack(topology()), config(), STAGED, ENV)
    assert (spec.name, spec.queue, spec.node_label, spec.tags) == ("wc", "streaming", "stream", {"squall", "wc"})
    assert spec.max_attempts == 1
    for name, service in spec.services.items():
        assert service.max_restarts == -1  # Skein always relaunches; Squall's policy decides
        assert service.files["state.json"].visibility == skein.model.FileVisibility.APPLICATION
        assert service.files["topology"].type == skein.model.FileType.ARCHIVE
        assert f"--service {name} " in service.script and "--state \"$PWD/state.json\"" in service.script
        assert "squall:" not in service.script and not service.env  # no credential on a command line or in env
    assert "squall.yarn.driver" in spec.master.script
    assert set(spec.master.files) == {"state.json"}


def test_merged_shapes_give_at_most_max_shapes_services():
    cfg = config(**{"squall.yarn.max.shapes": 1})
    plan = pack(topology(), algorithm="ffd")
    spec = build_spec("t", plan, cfg, STAGED, ENV)
    with_containers = [name for name, s in spec.services.items() if s.instances and name != TMASTER_SERVICE]
    assert len(with_containers) == 1  # besides the topology master's, and the spare one (no container)
    assert len(spec.services) <= 3
    assert sum(s.instances for s in spec.services.values()) == len(plan.containers) + 1


def test_placement_hints_come_from_the_pools():
    cfg = config()
    plan = pack(topology(), algorithm="ffd")
    pools = [NodePool(f"node{i}", Amount(8, 16384)) for i in range(3)]
    placement = place(plan, pools, tmaster_container_resources(cfg))
    spec = build_spec("t", plan, cfg, STAGED, ENV, placement)
    for name, service in spec.services.items():
        ids = [cid for cid, s in services_of(service_shapes(plan, cfg)).items() if s == name]
        assert service.nodes == sorted({placement.assigned[c] for c in ids})
        assert service.relax_locality


def test_archived_environment_is_shipped_and_used(tmp_path):
    archive = tmp_path / "env.tar.gz"
    archive.write_bytes(b"")
    env = PythonEnvironment.from_config(config(**{"squall.yarn.environment": str(archive)}))
    spec = build_spec("t", pack(topology()), config(), Staged("/s.json", "/t.tar.gz", env.archive), env)
    for service in list(spec.services.values()) + [spec.master]:
        assert service.files["environment"].type == skein.model.FileType.ARCHIVE
        assert "exec environment/bin/python -m" in service.script


@pytest.mark.parametrize("settings, message", [
    ({}, "set squall.yarn.python"),
    ({"squall.yarn.python": "python3"}, "absolute path"),
    ({"squall.yarn.python": "/p", "squall.yarn.environment": "/e.tar.gz"}, "both set"),
    ({"squall.yarn.environment": "/nowhere/env.tar.gz"}, "no such file"),
    ({"squall.yarn.environment": "/e.whl"}, "tar.gz"),
])
def test_environment_choice_is_checked(settings, message):
    with pytest.raises(YarnError, match=message):
        PythonEnvironment.from_config(config(**settings))


def test_a_shape_above_the_queue_maximum_names_the_component(tmp_path, monkeypatch):
    (tmp_path / "yarn-site.xml").write_text(
        "<configuration><property><name>yarn.scheduler.maximum-allocation-mb</name><value>8192</value>"
        "</property></configuration>")
    (tmp_path / "capacity-scheduler.xml").write_text(
        "<configuration><property><name>yarn.scheduler.capacity.root.streaming.maximum-allocation-mb</name>"
        "<value>1024</value></property></configuration>")
    monkeypatch.setenv("HADOOP_CONF_DIR", str(tmp_path))
    plan = pack(topo([comp("spout", 1, ram=200), comp("big", 2, ram=1800, inputs=["spout"])]), algorithm="ffd")
    with pytest.raises(PackingError, match=r"component 'big'.*queue 'streaming' \(capacity-scheduler.xml\)"):
        checked_shapes(plan, config())
    monkeypatch.delenv("HADOOP_CONF_DIR")
    checked_shapes(plan, config())  # within squall.yarn.max.allocation.mb without the queue's limit


def test_topology_archive_holds_the_folder_without_hidden_files(tmp_path):
    import tarfile

    src = tmp_path / "src"
    (src / "__pycache__").mkdir(parents=True)
    (src / ".git").mkdir()
    (src / "wc.py").write_text("x = 1\n")
    (src / "helpers.py").write_text("y = 2\n")
    (src / "__pycache__" / "wc.pyc").write_bytes(b"")
    path = topology_archive(str(src / "wc.py"), str(tmp_path / "out"))
    with tarfile.open(path) as tar:
        assert sorted(tar.getnames()) == ["helpers.py", "wc.py"]


def test_the_spec_has_a_spare_service_at_the_container_cap_with_no_container():
    plan = pack(topology(), algorithm="ffd", granularity="task")
    shapes = service_shapes(plan, config())
    spare = shapes[-1]
    assert spare.containers == () and (spare.memory_mb, spare.vcores) == (8192, 4)  # squall.container.max.*
    spec = build_spec("t", plan, config(), STAGED, ENV)
    assert spec.services[spare.name].instances == 0
    # within YARN's maximum allocation
    small = spare_shape(plan, config(**{"squall.yarn.max.allocation.mb": 4096, "squall.yarn.max.allocation.vcores": 2}))
    assert (small.memory_mb, small.vcores) == (4096, 2)


def test_an_update_moves_a_container_that_outgrew_its_yarn_container_to_a_new_one(tmp_path):
    from squall.idl import schema
    from squall.packing import repack, with_component_config
    from squall.state import Kind, LocalStateManager
    from squall.yarn.scheduler import YarnScheduler

    t = topology()
    plan = pack(t, algorithm="ffd", granularity="task")
    state = LocalStateManager(str(tmp_path / "state"))
    state.put(Kind.TOPOLOGY, "t", t)
    shapes = service_shapes(plan, dict(base_config()))
    state.put(Kind.SCHEDULER, "t", schema.SchedulerLocation(
        topology_name="t", scheduler="yarn", host="h", executor_pids={}, services=services_of(shapes)))
    execution = schema.ExecutionState(topology_name="t", run_id="r", run_dir=str(tmp_path), submit_time=0.0,
                                      submitter="u", status=schema.TopologyStatus.RUNNING, secret="s", cluster="yarn")
    bigger = with_component_config(t, {"count": {"squall.component.ram.mb": 1800}})
    proposed, _ = repack(bigger, plan, {})
    fitted = YarnScheduler(state).fit_update(execution, bigger, plan, proposed, None)
    moved = {c.id for c in proposed.containers} - {c.id for c in fitted.containers}
    assert moved, "a container that outgrew its shape kept its id"
    assert min({c.id for c in fitted.containers} - {c.id for c in proposed.containers}) > max(c.id for c in plan.containers)
    unchanged = YarnScheduler(state).fit_update(execution, t, plan, plan, None)
    assert unchanged is plan


def test_a_topology_that_checkpoints_needs_hdfs_storage_on_yarn():
    from squall import Grouping, TopologyBuilder
    from squall.scheduler.base import LaunchOptions
    from squall.yarn.scheduler import YarnScheduler

    from stateful_components import Count, Source

    builder = TopologyBuilder("kv")
    builder.add_bolt("count", Count, inputs={builder.add_spout("source", Source): Grouping.fields("word")})
    plan = builder.build().plan
    scheduler = YarnScheduler(None, LaunchOptions(dry_run=True))
    cfg = config(**{"squall.runtime.bind.host": "0.0.0.0", "squall.yarn.python": "/opt/squall/bin/python"})
    with pytest.raises(YarnError, match=r"squall.state.storage=\(empty: the run folder\): .*needs an hdfs:// URI"):
        scheduler.check(plan, pack(plan), cfg)
    scheduler.check(plan, pack(plan), {**cfg, "squall.state.storage": "hdfs://namenode:8020/squall/checkpoints"})
    assert scheduler.check(topology(), pack(topology()), cfg) is None  # no checkpoints: no storage needed
