"""Kafka -> a stateless bolt -> Parquet: the connectors end to end (tests/connectors/test_kafka_to_parquet.py).

kafka (KafkaSpout, par 2) -> tag (shuffle, par 2: upper-cases the value, keeps where the record came from)
-> parquet (FileSink, par 2). Brokers, topic, output path and mode come from ``--config-property``.
"""
from squall import Bolt, TopologyBuilder
from squall.connectors.files import FileSink
from squall.connectors.kafka import KafkaSpout


class Tag(Bolt):
    outputs = ["topic", "partition", "offset", "key", "value"]

    def process(self, tup):
        self.emit([tup["topic"], tup["partition"], tup["offset"], tup["key"], tup["value"].upper()])


builder = TopologyBuilder("kafka_to_parquet")
kafka = builder.add_spout("kafka", KafkaSpout, par=2, config={"kafka.group.id": "kafka_to_parquet",
                                                               "kafka.start": "earliest"})
tag = builder.add_bolt("tag", Tag, par=2, inputs=[kafka])
builder.add_bolt("parquet", FileSink, par=2, inputs=[tag], config={"files.format": "parquet",
                                                                   "files.roll.interval.secs": 2})
builder.set_config({"topology.state.checkpoint.interval.secs": 1, "topology.workers": 2,
                    "topology.message.timeout.secs": 5})  # at least once, lost trees replay sooner
topology = builder.build()
