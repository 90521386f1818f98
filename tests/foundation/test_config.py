"""Configuration: registry, precedence of layers, command-line parsing."""
import os
import subprocess
import sys

import pytest
from api_components import SinkBolt, WordSpout

from squall import TopologyBuilder
from squall.conf import ConfigError, base_config, parse_property, registry
from squall.conf import resolve
from squall.idl import replace
from squall.logical import component_config, decode_config, encode_config, topology_config, with_overrides
from squall.scheduler.launcher import with_cluster_layer

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_every_key_has_a_type_default_and_doc():
    keys = registry()
    assert len(keys) > 30
    for key in keys.values():
        assert key.doc and key.type in ("int", "float", "bool", "str", "choice")
        key.check(key.default)  # defaults are valid values of their own type


def test_names_follow_storm_then_heron_then_squall():
    keys = registry()
    for storm in ("topology.workers", "topology.max.spout.pending", "topology.message.timeout.secs",
                  "topology.tick.tuple.freq.secs", "topology.debug"):
        assert storm in keys
    assert "topology.reliability.mode" in keys
    assert all(k.startswith(("topology.", "squall.")) for k in keys)


@pytest.fixture
def layered(tmp_path, monkeypatch):
    """Every layer sets a key that the next layer up overrides."""
    site = tmp_path / "site.yaml"
    site.write_text("topology.workers: 2\nsquall.component.cpu: 0.1\nsquall.component.ram.mb: 100\n"
                    "squall.component.disk.mb: 10\ntopology.message.timeout.secs: 11\n")
    monkeypatch.setattr(resolve, "SITE_FILE", str(site))
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text("topology.workers: 3\nsquall.component.cpu: 0.2\nsquall.component.ram.mb: 200\n"
                       "squall.component.disk.mb: 20\n")
    b = TopologyBuilder("layers")
    b.add_spout("s", WordSpout, config={"squall.component.ram.mb": 400, "squall.component.disk.mb": 40})
    b.add_bolt("b", SinkBolt, inputs=["s"])
    b.set_config({"squall.component.cpu": 0.3, "squall.component.ram.mb": 300, "squall.component.disk.mb": 30})
    plan = with_overrides(b.build().plan, {"squall.component.disk.mb": 50})
    return plan, base_config(str(cluster))


def test_precedence_defaults_site_cluster_topology_component_cli(layered):
    plan, base = layered
    s = component_config(plan, "s", base)
    assert s["topology.tick.tuple.freq.secs"] is None       # built-in default
    assert s["topology.message.timeout.secs"] == 11.0       # site file
    assert s["topology.workers"] == 3                       # cluster file
    assert s["squall.component.cpu"] == 0.3                 # topology config
    assert s["squall.component.ram.mb"] == 400              # component config
    assert s["squall.component.disk.mb"] == 50              # --config-property
    assert component_config(plan, "b", base)["squall.component.ram.mb"] == 300


def test_bad_value_in_cluster_file_names_file_and_key(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("topology.workers: many\n")
    with pytest.raises(ConfigError,
                       match=r"topology.workers \(cluster config .*bad.yaml\): expected an integer, got 'many'"):
        base_config(str(bad))


def test_the_cluster_layer_travels_in_the_plan_under_its_own_name(layered):
    """Submit puts the cluster file's values in the plan's cluster layer, not in the topology's config: a
    process resolving the stored plan gets them below the topology's keys, and an error names the layer."""
    plan, base = layered
    stored = with_cluster_layer(plan, base)
    assert stored.config == plan.config
    assert decode_config(stored.cluster_config)["topology.workers"] == 3
    assert component_config(stored, "s")["topology.workers"] == 3  # resolved without the cluster file
    assert component_config(stored, "s")["squall.component.cpu"] == 0.3  # the topology's own key above it
    broken = replace(stored, cluster_config=encode_config({"topology.workers": "many"}, "cluster config"))
    with pytest.raises(ConfigError, match=r"topology.workers \(cluster config\): expected an integer, got 'many'"):
        topology_config(broken)
    with pytest.raises(ConfigError, match=r"topology.workers \(cluster config\)"):
        component_config(broken, "b")


def test_an_instance_reads_the_site_file_once():
    """The configuration steps of an instance process's start read conf/squall.yaml once (bench/config_reads.py
    counts the opens with an audit hook, in a fresh interpreter)."""
    done = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "config_reads.py")], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("resolves its configuration: 1"), done.stdout


def test_missing_and_malformed_files(tmp_path):
    with pytest.raises(ConfigError, match="cannot read config file .*nope.yaml"):
        base_config(str(tmp_path / "nope.yaml"))
    broken = tmp_path / "broken.yaml"
    broken.write_text("a: [1, 2\n")
    with pytest.raises(ConfigError, match="is not valid YAML"):
        base_config(str(broken))
    listy = tmp_path / "list.yaml"
    listy.write_text("- 1\n")
    with pytest.raises(ConfigError, match="expected a mapping"):
        base_config(str(listy))


def test_parse_property_reads_yaml_scalars():
    assert parse_property("topology.workers=4") == ("topology.workers", 4)
    assert parse_property("topology.debug=true") == ("topology.debug", True)
    assert parse_property("squall.component.cpu=0.5") == ("squall.component.cpu", 0.5)
    assert parse_property("squall.yarn.queue=spark") == ("squall.yarn.queue", "spark")
    with pytest.raises(ConfigError, match="expected KEY=VALUE"):
        parse_property("topology.workers")


def test_override_of_wrong_type_is_refused(layered):
    plan, _ = layered
    with pytest.raises(ConfigError, match=r"topology.max.spout.pending \(--config-property\): expected an integer"):
        with_overrides(plan, {"topology.max.spout.pending": "abc"})


def test_ints_are_accepted_for_floats_but_not_bools():
    key = registry()["squall.component.cpu"]
    assert key.check(2) == 2.0
    with pytest.raises(ConfigError, match="expected a number, got True"):
        key.check(True)
    nullable = registry()["topology.tick.tuple.freq.secs"]
    assert nullable.check(None) is None
    with pytest.raises(ConfigError, match="a value is required"):
        registry()["topology.message.timeout.secs"].check(None)


def test_credentials_are_masked_wherever_config_is_shown():
    from squall.conf import is_secret, masked

    assert is_secret("squall.state.zookeeper.auth")  # a registered secret
    for key in ("kafka.consumer.sasl.password", "kafka.producer.ssl.key.password", "kafka.consumer.sasl.jaas.config",
                "kafka.consumer.sasl.oauthbearer.client.secret"):
        assert is_secret(key), key
    for key in ("kafka.bootstrap.servers", "kafka.topics", "topology.workers", "files.path"):
        assert not is_secret(key), key
    assert masked({"kafka.topics": "a", "kafka.consumer.sasl.password": "hunter2"}) == {
        "kafka.topics": "a", "kafka.consumer.sasl.password": "***"}
