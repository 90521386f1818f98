"""Overload: a spout paced at ``overload.rate`` tuples/s into a bolt that waits ``overload.wait.ms``
per tuple (~10x slower than the spout).

Tuples carry their emit time. The spout writes how many it emitted to
``emitted-<pid>`` (when deactivated and when closed); the bolt writes, every
half second, how many it processed and the longest emit -> process wait it
saw, to ``waits-<task>.jsonl``. At least once the spout emits with ids.
"""
import json
import os
import time

from squall import Bolt, Spout, TopologyBuilder


class Paced(Spout):
    outputs = ["t"]

    def initialize(self, config, context):
        self.out = config["overload.out.dir"]
        self.reliable = config["topology.reliability.mode"] == "ATLEAST_ONCE"
        self.interval = 1.0 / config["overload.rate"]
        self.next_at = time.monotonic()
        self.n = 0

    def next_tuple(self):
        now = time.monotonic()
        if now < self.next_at:
            return
        self.next_at = max(self.next_at + self.interval, now - 0.01)  # no catching up after a pause
        self.emit([time.time()], tup_id=self.n if self.reliable else None)
        self.n += 1

    def deactivate(self):
        self.write()

    def close(self):
        self.write()

    def write(self):
        with open(os.path.join(self.out, f"emitted-{os.getpid()}"), "w") as f:
            f.write(str(self.n))


class Slow(Bolt):
    def initialize(self, config, context):
        self.wait = config["overload.wait.ms"] / 1000
        self.path = os.path.join(config["overload.out.dir"], f"waits-{context.get_task_id()}.jsonl")
        self.processed = 0
        self.longest = 0.0
        self.window_end = time.monotonic() + 0.5

    def process(self, tup):
        self.longest = max(self.longest, time.time() - tup["t"])
        self.processed += 1
        time.sleep(self.wait)
        if time.monotonic() >= self.window_end:
            self.flush()

    def process_tick(self, tup):
        self.flush()

    def flush(self):
        with open(self.path, "a") as f:
            f.write(json.dumps({"at": time.time(), "processed": self.processed, "longest": self.longest}) + "\n")
        self.longest = 0.0
        self.window_end = time.monotonic() + 0.5


builder = TopologyBuilder("overload")
spout = builder.add_spout("paced", Paced)
builder.add_bolt("slow", Slow, inputs=[spout])
# not chained: the slow bolt's queue is the stream manager's to bound (what these tests look at); a chain
# would call the bolt from the spout's emit, and the spout would simply go at the bolt's pace
builder.set_config({"topology.workers": 2, "topology.tick.tuple.freq.secs": 0.5, "squall.chaining": "off",
                    "overload.rate": 5000, "overload.wait.ms": 2})
topology = builder.build()
