"""Numbers into Kafka at ATLEAST_ONCE, for a SIGKILL of the Kafka bolt mid-run.

numbers (a ReliableSpout, par 1, tuple id = the number, replayed when its tree fails or times out; paced
at ``numbers.rate``/s, or unpaced once a test writes ``inf`` to the file ``testing.rate.file`` names) ->
sink (KafkaBolt, shuffle, par 2): a tuple is acked once the broker confirmed its record.
"""
from squall import ReliableSpout, TopologyBuilder
from squall.connectors.kafka import KafkaBolt
from squall.testing.words import RATE_FILE_KEY, Pace


class Numbers(ReliableSpout):
    outputs = ["n", "name"]
    max_retries = 1000

    def initialize(self, config, context):
        self.todo = iter(range(config["numbers.count"]))
        self.pace = Pace(config["numbers.rate"], config.get(RATE_FILE_KEY))

    def next_tuple(self):
        if self.pace.due():
            i = next(self.todo, None)
            if i is not None:
                self.emit([i, f"n{i}"], tup_id=i)
                self.pace.emitted()


builder = TopologyBuilder("kafka_bolt_reliable")
numbers = builder.add_spout("numbers", Numbers)
builder.add_bolt("sink", KafkaBolt, par=2, inputs=[numbers])
builder.set_config({"squall.packing.algorithm": "roundrobin", "topology.workers": 2,
                    "topology.reliability.mode": "ATLEAST_ONCE", "topology.state.checkpoint.interval.secs": 0.5,
                    "topology.message.timeout.secs": 5, "numbers.count": 3000, "numbers.rate": 300,
                    "kafka.bootstrap.servers": "set-by-the-test:9092", "kafka.topic": "set-by-the-test"})
topology = builder.build()
