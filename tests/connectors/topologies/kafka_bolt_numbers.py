"""Numbers into Kafka at EFFECTIVELY_ONCE, for a SIGKILL of the Kafka bolt mid-run.

numbers (a StatefulSpout, par 1: emits 0 .. ``numbers.count`` - 1 at ``numbers.rate``/s, or unpaced once a
test writes ``inf`` to the file ``testing.rate.file`` names; its position is its state) -> sink (KafkaBolt, shuffle, par 2) writing ``{"n": i, "name": "n<i>"}`` to ``kafka.topic``
keyed by ``name``. ``kafka.bootstrap.servers`` and ``kafka.topic`` come with ``--config-property``.
"""
from squall import StatefulSpout, TopologyBuilder
from squall.connectors.kafka import KafkaBolt
from squall.testing.words import RATE_FILE_KEY, Pace

BURST = 100  # most emits a call, when behind or unpaced


class Numbers(StatefulSpout):
    outputs = ["n", "name"]

    def initialize(self, config, context):
        self.count = config["numbers.count"]
        self.pace = Pace(config["numbers.rate"], config.get(RATE_FILE_KEY))

    def init_state(self, state):
        self.state = state

    def next_tuple(self):
        i = start = self.state.get("next", 0)
        while i < min(self.count, start + BURST) and self.pace.due():
            self.emit([i, f"n{i}"])
            i += 1
            self.pace.emitted()
        self.state.put("next", i)


builder = TopologyBuilder("kafka_bolt_numbers")
numbers = builder.add_spout("numbers", Numbers)
builder.add_bolt("sink", KafkaBolt, par=2, inputs=[numbers], config={"kafka.key.field": "name"})
builder.set_config({"squall.packing.algorithm": "roundrobin", "topology.workers": 2,
                    "topology.reliability.mode": "EFFECTIVELY_ONCE", "topology.state.checkpoint.interval.secs": 0.5,
                    "numbers.count": 3000, "numbers.rate": 300,
                    "kafka.bootstrap.servers": "set-by-the-test:9092", "kafka.topic": "set-by-the-test"})
topology = builder.build()
