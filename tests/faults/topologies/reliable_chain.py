"""reliable.py with its spout and relay chained: ids (par 2) -> relay (shuffle, par 2: each ids task
and its relay run in one process) -> sink (fields, par 2). Each spout task emits its share of the
ids (task k: k, k + 2, ...), resuming from ``acked.log`` when it starts again."""
from reliable import DurableIds, Record, Relay

from squall import Grouping, TopologyBuilder


class ShareOfIds(DurableIds):
    def initialize(self, config, context):
        super().initialize(config, context)
        tasks = context.get_component_tasks(context.get_component_id())
        index = tasks.index(context.get_task_id())
        self.todo = [i for i in self.todo if i % len(tasks) == index]


builder = TopologyBuilder("reliable")
ids = builder.add_spout("ids", ShareOfIds, par=2)
relay = builder.add_bolt("relay", Relay, par=2, inputs={ids: Grouping.SHUFFLE})
builder.add_bolt("sink", Record, par=2, inputs={relay: Grouping.fields("id")})
builder.set_config({"topology.workers": 1, "topology.reliability.mode": "ATLEAST_ONCE",
                    "topology.message.timeout.secs": 3, "topology.max.spout.pending": 200,
                    "squall.chaining": "auto", "faults.ids": 1500, "faults.rate": 150})
topology = builder.build()
