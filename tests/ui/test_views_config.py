"""The UI's configuration views mask credentials, in the topology's config and in each component's."""
from squall import Bolt, Spout, TopologyBuilder
from squall.ui.views import logical_plan, visible_config


class Source(Spout):
    outputs = ["x"]


class Sink(Bolt):
    pass


def test_component_and_topology_credentials_are_masked():
    builder = TopologyBuilder("masked")
    source = builder.add_spout("source", Source, config={"kafka.consumer.sasl.password": "hunter2",
                                                         "kafka.topics": "events"})
    builder.add_bolt("sink", Sink, inputs=[source])
    builder.set_config({"kafka.producer.sasl.jaas.config": "user=x password=y", "topology.workers": 1})
    plan = builder.build().plan
    assert visible_config(plan) == {"kafka.producer.sasl.jaas.config": "***", "topology.workers": 1}
    configs = {c["name"]: c["config"] for c in logical_plan(plan)}
    assert configs["source"] == {"kafka.consumer.sasl.password": "***", "kafka.topics": "events"}
    assert "hunter2" not in repr(logical_plan(plan))
