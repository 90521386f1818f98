"""Kafka records counted once each, end to end: KafkaSpout (par 2) -> a two-phase counting sink.

kafka (a ``KafkaSpout`` on ``kafka.topics``) -> count (a ``StatefulBolt``, fields on the record key, par
2): its state is ``"<partition>:<offset>" -> times seen``; at ``pre_save`` it keeps a copy for the
checkpoint and at ``post_save`` writes it to ``count-<task>.json`` in ``testing.out.dir`` with the
checkpoint's id, so only output of complete checkpoints is seen (``squall.testing.sinks``). The test
submits it with ``--config-property`` for the broker, the topic, the output folder (``testing.out.dir``) and (for at least once) the mode.
"""
from squall import Grouping, TopologyBuilder
from squall.connectors.kafka import KafkaSpout
from squall.testing.sinks import CommittedCounts


class Count(CommittedCounts):
    """Counts each record once per (partition, offset): a record counted twice or lost shows."""

    def key(self, tup):
        return f"{tup['partition']}:{tup['offset']}"


builder = TopologyBuilder("kafka_count")
kafka = builder.add_spout("kafka", KafkaSpout, par=2, config={"kafka.start": "earliest"})
builder.add_bolt("count", Count, par=2, inputs={kafka: Grouping.fields("key")})
builder.set_config({"squall.packing.algorithm": "roundrobin", "topology.workers": 2,
                    "topology.reliability.mode": "EFFECTIVELY_ONCE", "topology.state.checkpoint.interval.secs": 0.5,
                    "topology.message.timeout.secs": 10})
topology = builder.build()
