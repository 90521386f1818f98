"""A spout that emits ``capacity.rate`` tuples/s (all its tasks together).

It never runs more than ``MAX_DEBT_SECS`` behind its schedule: after
backpressure it resumes at its rate instead of bursting to catch up, so the
rate a bolt carries is the rate the bolt can take, never an earlier backlog.
"""
import time

from squall import Spout

MAX_DEBT_SECS = 0.2


class PacedSpout(Spout):
    outputs = ["n"]

    def initialize(self, config, context):
        tasks = len(context.get_component_tasks(context.get_component_id()))
        self.interval = tasks / float(config["capacity.rate"])
        self.next_at = time.monotonic()
        self.n = 0

    def next_tuple(self):
        now = time.monotonic()
        if now < self.next_at:
            return
        self.next_at = max(self.next_at, now - MAX_DEBT_SECS) + self.interval
        self.n += 1
        self.emit([self.n])
