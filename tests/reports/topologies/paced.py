"""A spout that emits ``capacity.rate`` tuples/s (all its tasks together), or the
rate written in the file ``capacity.rate.file`` names once it exists (read every
``RATE_POLL_SECS``: a benchmark changes the offered load of a running topology).

It never runs more than ``MAX_DEBT_SECS`` behind its schedule: after
backpressure it resumes at its rate instead of bursting to catch up, so the
rate a bolt carries is the rate the bolt can take, never an earlier backlog.
"""
import time

from squall import Spout

MAX_DEBT_SECS = 0.2
RATE_POLL_SECS = 0.5


class PacedSpout(Spout):
    outputs = ["n"]

    def initialize(self, config, context):
        self.tasks = len(context.get_component_tasks(context.get_component_id()))
        self.rate_file = config.get("capacity.rate.file")
        self.interval = self.tasks / float(config["capacity.rate"])
        self.next_at = self.poll_at = time.monotonic()
        self.n = 0

    def next_tuple(self):
        now = time.monotonic()
        if self.rate_file and now >= self.poll_at:
            self.poll_at = now + RATE_POLL_SECS
            try:
                with open(self.rate_file) as f:
                    self.interval = self.tasks / float(f.read())
            except FileNotFoundError:
                pass
        if now < self.next_at:
            return
        self.next_at = max(self.next_at, now - MAX_DEBT_SECS) + self.interval
        self.n += 1
        self.emit([self.n])
