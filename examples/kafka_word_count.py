"""Kafka -> windowed word counts -> Parquet files that Spark reads.

Sentences arrive in a Kafka topic; a ``KafkaSpout`` reads them (its partitions
shared by its tasks), a bolt splits them into words stamped with their
record's time and partition, a ``WindowedBolt`` counts each word per 10 s of
event time (a watermark per partition), and
a ``FileSink`` writes the counts as Parquet part files, made visible only when
committed (at least once here: a part file is committed when it rolls, and the
tuples in it are acked then)::

    squall submit examples/kafka_word_count.py \\
        --config-property kafka.bootstrap.servers=broker1:9092,broker2:9092 \\
        --config-property kafka.topics=sentences \\
        --config-property files.path=hdfs://namenode:8020/data/word_counts

    spark.read.parquet("hdfs://namenode:8020/data/word_counts").show()

To try it on one machine, ``python examples/kafka_demo.py`` starts a mock
Kafka cluster (librdkafka's), feeds it sentences, runs this topology on the
local cluster and reads what it wrote. docs/connectors.md has every key.
"""
from __future__ import annotations

from squall import Bolt, Grouping, TopologyBuilder, Window, WindowedBolt
from squall.connectors.files import FileSink
from squall.connectors.kafka import KafkaSpout


class Split(Bolt):
    outputs = ["word", "ts", "partition"]

    def process(self, tup):
        ts = tup["timestamp"] / 1000.0  # Kafka stamps records in ms; windows count in seconds
        for word in tup["value"].split():
            self.emit([word, ts, tup["partition"]])


class WindowCounts(WindowedBolt):
    """Each word's count per 10 s of event time, one accumulator per window (not every tuple)."""

    outputs = ["window_end", "word", "count"]
    window = Window.tumbling(duration=10.0)
    timestamp_field = "ts"
    lag = 2.0
    # a spout task reads several partitions, one of which may run ahead of another (a backlog read
    # partition by partition): a watermark per partition keeps the slower one's words from being late
    watermark_fields = ("partition",)

    def initial(self):
        return {}

    def reduce(self, counts, tup):
        counts[tup["word"]] = counts.get(tup["word"], 0) + 1
        return counts

    def merge(self, older, newer):
        merged = dict(older)
        for word, n in newer.items():
            merged[word] = merged.get(word, 0) + n
        return merged

    def process_window(self, window):
        for word, n in sorted(window.value.items()):
            self.emit([window.end, word, n])


builder = TopologyBuilder("kafka_word_count")
sentences = builder.add_spout("sentences", KafkaSpout, par=2, config={
    "kafka.group.id": "kafka_word_count", "kafka.start": "committed", "kafka.value.format": "utf-8"})
words = builder.add_bolt("split", Split, par=2, inputs=[sentences])
counts = builder.add_bolt("count", WindowCounts, par=2, inputs={words: Grouping.fields("word")})
builder.add_bolt("parquet", FileSink, par=1, inputs=[counts], config={
    "files.format": "parquet", "files.roll.interval.secs": 10})
builder.set_config({
    "topology.reliability.mode": "ATLEAST_ONCE", "topology.message.timeout.secs": 60,
    # a record's tree completes once its window has fired and the part file holding its count is
    # committed (up to a window, the lag and a roll: ~25 s): let that many records be in flight
    "topology.max.spout.pending": 20000,
})
topology = builder.build()
