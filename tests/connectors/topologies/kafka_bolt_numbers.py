"""Numbers into Kafka at EFFECTIVELY_ONCE, for a SIGKILL of the Kafka bolt mid-run.

numbers (a StatefulSpout, par 1: emits 0 .. ``numbers.count`` - 1 at ``numbers.rate``/s; its position is
its state) -> sink (KafkaBolt, shuffle, par 2) writing ``{"n": i, "name": "n<i>"}`` to ``kafka.topic``
keyed by ``name``. ``kafka.bootstrap.servers`` and ``kafka.topic`` come with ``--config-property``.
"""
import time

from squall import StatefulSpout, TopologyBuilder
from squall.connectors.kafka import KafkaBolt


class Numbers(StatefulSpout):
    outputs = ["n", "name"]

    def initialize(self, config, context):
        self.count = config["numbers.count"]
        self.interval = 1.0 / config["numbers.rate"]
        self.next_at = time.monotonic()

    def init_state(self, state):
        self.state = state

    def next_tuple(self):
        now = time.monotonic()
        i = self.state.get("next", 0)
        while self.next_at <= now and i < self.count:
            self.emit([i, f"n{i}"])
            i += 1
            self.next_at += self.interval
        self.state.put("next", i)


builder = TopologyBuilder("kafka_bolt_numbers")
numbers = builder.add_spout("numbers", Numbers)
builder.add_bolt("sink", KafkaBolt, par=2, inputs=[numbers], config={"kafka.key.field": "name"})
builder.set_config({"squall.packing.algorithm": "roundrobin", "topology.workers": 2,
                    "topology.reliability.mode": "EFFECTIVELY_ONCE", "topology.state.checkpoint.interval.secs": 0.5,
                    "numbers.count": 3000, "numbers.rate": 300,
                    "kafka.bootstrap.servers": "set-by-the-test:9092", "kafka.topic": "set-by-the-test"})
topology = builder.build()
