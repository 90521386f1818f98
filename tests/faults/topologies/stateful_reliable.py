"""The stateful word count at ATLEAST_ONCE (Storm's stateful bolts): acks held until the checkpoint.

sentences (a ReliableSpout, par 2, ids = sentence numbers, its position in memory) -> split -> count
(squall.testing.sinks.CommittedCounts, a two-phase sink). A rollback of the count bolt's state is
followed by the replay of every tuple whose ack it held: no count is lost.
"""
from squall import Grouping, ReliableSpout, TopologyBuilder
from squall.testing.sinks import CommittedCounts
from squall.testing.words import RATE_FILE_KEY, RATE_KEY, SENTENCES_KEY, Pace, Split, sentence


class Sentences(ReliableSpout):
    outputs = ["sentence"]
    max_retries = 1000

    def initialize(self, config, context):
        tasks = sorted(context.get_component_tasks(context.get_component_id()))
        self.todo = iter(range(tasks.index(context.get_task_id()), config[SENTENCES_KEY], len(tasks)))
        self.pace = Pace(config[RATE_KEY], config.get(RATE_FILE_KEY))

    def next_tuple(self):
        if self.pace.due():
            i = next(self.todo, None)
            if i is not None:
                self.emit([sentence(i)], tup_id=i)
                self.pace.emitted()


builder = TopologyBuilder("stateful_reliable")
sentences = builder.add_spout("sentences", Sentences, par=2)
split = builder.add_bolt("split", Split, par=2, inputs={sentences: Grouping.SHUFFLE})
builder.add_bolt("count", CommittedCounts, par=2, inputs={split: Grouping.fields("word")})
builder.set_config({"squall.packing.algorithm": "roundrobin", "topology.workers": 2,
                    "topology.reliability.mode": "ATLEAST_ONCE", "topology.state.checkpoint.interval.secs": 0.5,
                    "topology.message.timeout.secs": 10, SENTENCES_KEY: 6000, RATE_KEY: 300})
topology = builder.build()
