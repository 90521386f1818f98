"""For the debugging tests (tests/e2e/test_debugging.py): a spout that emits ``debug.tuples`` numbered
tuples each time a ``go-<k>`` file appears in ``debug.out.dir`` (and writes ``done-<k>`` then), and a bolt
of two tasks that logs each tick at DEBUG (and every tenth at INFO) through ``self.logger``. Both log at
DEBUG, so a level set for one component shows in its tasks' logs only.

Config: ``debug.out.dir``, ``debug.tuples``.
"""
import os
import time

from squall import Bolt, Spout, TopologyBuilder


class Numbers(Spout):
    outputs = ["n", "text"]

    def initialize(self, config, context):
        self.out = config["debug.out.dir"]
        self.tuples = config["debug.tuples"]
        self.batch, self.i, self.logged = 0, 0, 0.0

    def next_tuple(self):
        if time.monotonic() - self.logged > 0.1:
            self.logged = time.monotonic()
            self.logger.debug("spout waiting for batch %d", self.batch + 1)
        if self.i == 0:
            if not os.path.exists(os.path.join(self.out, f"go-{self.batch + 1}")):
                return
            self.batch += 1
        base = (self.batch - 1) * self.tuples
        self.emit([base + self.i, f"text-{base + self.i}"], tup_id=base + self.i)
        self.i += 1
        if self.i == self.tuples:
            self.i = 0
            with open(os.path.join(self.out, f"done-{self.batch}"), "w") as f:
                f.write(str(self.tuples))


class Ticking(Bolt):
    tick_secs = 0.1

    def initialize(self, config, context):
        self.ticks = 0

    def process(self, tup):
        pass

    def process_tick(self, tup):
        self.ticks += 1
        self.logger.debug("tick %d", self.ticks)
        if self.ticks % 10 == 0:
            self.logger.info("ticked %d times", self.ticks)


builder = TopologyBuilder("debugged")
numbers = builder.add_spout("numbers", Numbers)
builder.add_bolt("ticking", Ticking, par=2, inputs=[numbers])
topology = builder.build()
