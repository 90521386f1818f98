"""A finite reliable topology for the fault tests: every id must be processed and acked.

ids (a ReliableSpout over ``faults.ids`` ids, paced at ``faults.rate``/s, or unpaced once a test writes ``inf``
to the file ``testing.rate.file`` names) -> relay (shuffle, par 2)
-> sink (fields on the id, par 2). The spout appends each acked id to
``acked.log`` in ``faults.out.dir`` and, when it starts again (it was killed),
emits every id not acked yet: what a reliable source (a Kafka offset) gives.
Sinks append every id they process to ``seen-<task>-<pid>.log``. With
``faults.fail.every`` = k a sink fails every k-th id the first time it sees it
(``faults.fail.how``: ``fail`` explicitly, or ``raise``).
"""
import os

from squall import Bolt, Grouping, ReliableSpout, TopologyBuilder
from squall.testing.words import RATE_FILE_KEY, Pace


class DurableIds(ReliableSpout):
    outputs = ["id"]
    max_retries = 1000

    def initialize(self, config, context):
        out = config["faults.out.dir"]
        self.acked_path = os.path.join(out, "acked.log")
        done = set()
        if os.path.exists(self.acked_path):
            with open(self.acked_path) as f:
                done = {int(line) for line in f if line.strip()}
        self.todo = [i for i in range(config["faults.ids"]) if i not in done]
        self.acked = open(self.acked_path, "a", buffering=1)
        self.pace = Pace(config["faults.rate"], config.get(RATE_FILE_KEY))

    def next_tuple(self):
        if self.todo and self.pace.due():
            i = self.todo.pop(0)
            self.emit([i], tup_id=i)
            self.pace.emitted()

    def on_ack(self, tup_id):
        self.acked.write(f"{tup_id}\n")

    def on_give_up(self, tup_id, values):
        raise RuntimeError(f"gave up on {tup_id}")


class Relay(Bolt):
    outputs = ["id"]

    def process(self, tup):
        self.emit([tup["id"]])


class Record(Bolt):
    def initialize(self, config, context):
        out = config["faults.out.dir"]
        self.log = open(os.path.join(out, f"seen-{context.get_task_id()}-{os.getpid()}.log"), "a", buffering=1)
        self.every = config.get("faults.fail.every", 0)
        self.how = config.get("faults.fail.how", "fail")
        self.failed_once = set()

    def process(self, tup):
        i = tup["id"]
        if self.every and i % self.every == 0 and i not in self.failed_once:
            self.failed_once.add(i)
            if self.how == "raise":
                raise ValueError(f"planted failure on {i}")
            self.fail(tup)
            return
        self.log.write(f"{i}\n")


builder = TopologyBuilder("reliable")
ids = builder.add_spout("ids", DurableIds)
relay = builder.add_bolt("relay", Relay, par=2, inputs={ids: Grouping.SHUFFLE})
builder.add_bolt("sink", Record, par=2, inputs={relay: Grouping.fields("id")})
builder.set_config({"topology.workers": 2, "topology.reliability.mode": "ATLEAST_ONCE",
                    "topology.message.timeout.secs": 3, "topology.max.spout.pending": 200,
                    "faults.ids": 1500, "faults.rate": 300})
topology = builder.build()
