"""Kafka records counted once each, end to end: KafkaSpout (par 2) -> a two-phase counting sink.

kafka (a ``KafkaSpout`` on ``kafka.topics``) -> count (a ``StatefulBolt``, fields on the record key, par
2): its state is ``"<partition>:<offset>" -> times seen``; at ``pre_save`` it keeps a copy for the
checkpoint and at ``post_save`` writes it to ``count-<task>.json`` in ``count.out.dir`` with the
checkpoint's id, so only output of complete checkpoints is seen. The test submits it with
``--config-property`` for the broker, the topic, the output folder and (for at least once) the mode.
"""
import json
import os

from squall import Grouping, StatefulBolt, TopologyBuilder
from squall.connectors.kafka import KafkaSpout


class Count(StatefulBolt):
    def initialize(self, config, context):
        self.out = os.path.join(config["count.out.dir"], f"count-{context.get_task_id()}.json")

    def init_state(self, state):
        self.state = state
        self.pending = {}

    def process(self, tup):
        seen = f"{tup['partition']}:{tup['offset']}"
        self.state.put(seen, self.state.get(seen, 0) + 1)

    def pre_save(self, checkpoint_id):
        self.pending[checkpoint_id] = dict(self.state.items())

    def post_save(self, checkpoint_id):
        counts = self.pending.pop(checkpoint_id, None)
        for older in [c for c in self.pending if c < checkpoint_id]:
            del self.pending[older]
        if counts is None:
            return
        tmp = f"{self.out}.tmp"
        with open(tmp, "w") as f:
            json.dump({"checkpoint": checkpoint_id, "counts": counts}, f)
        os.replace(tmp, self.out)


builder = TopologyBuilder("kafka_count")
kafka = builder.add_spout("kafka", KafkaSpout, par=2, config={"kafka.start": "earliest"})
builder.add_bolt("count", Count, par=2, inputs={kafka: Grouping.fields("key")})
builder.set_config({"squall.packing.algorithm": "roundrobin", "topology.workers": 2,
                    "topology.reliability.mode": "EFFECTIVELY_ONCE", "topology.state.checkpoint.interval.secs": 0.5,
                    "topology.message.timeout.secs": 10})
topology = builder.build()
