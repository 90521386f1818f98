"""A paced spout of numbered ids (at least once) in front of an I/O-bound bolt: what the health manager
scales. Used by tests/health and bench/health.py.

Config: ``health.out.dir`` (the spout writes ``{"emitted": n, "acked": [ids]}`` to ``acked-<task>.json``
there: its first ``n`` ids were emitted, those acked so far; a restarted task resumes from it),
``health.ids`` (ids in all), ``health.rate`` (ids per second per spout task; a file ``rate`` in
``health.out.dir``, when there, overrides it while running: how bench steps the load),
``health.sleep.ms`` (the bolt's sleep per tuple; a file ``sleep.ms`` in ``health.out.dir``, when there,
overrides it while running: how bench/health_pending.py doubles the service time), ``health.report.backlog``
(when true, each spout task reports its backlog, the ids due by its pace and not emitted yet, as a source
spout reports its lag: ``squall.metrics.SourcePartitions``).
"""
import json
import os
import time

from squall import Bolt, Grouping, Spout, TopologyBuilder
from squall.metrics import SOURCE_PARTITIONS, SourcePartitions

FLUSH_SECS = 0.2


class PacedIds(Spout):
    outputs = ["id"]

    def initialize(self, config, context):
        self.out = config["health.out.dir"]
        self.task = context.get_task_id()
        self.ids = int(config["health.ids"])
        self.rate = float(config["health.rate"])
        self.rate_file = os.path.join(self.out, "rate")
        tasks = sorted(context.get_component_tasks(context.get_component_id()))
        self.first = self.next = tasks.index(self.task)  # spout tasks interleave: the k-th of n emits k, k + n, ...
        self.step = len(tasks)
        self.replay = []
        self.acked = set()
        self.resume()
        self.started = time.monotonic()
        self.emitted = 0
        self.flushed_at = 0.0
        if config.get("health.report.backlog"):
            context.register_metric(SOURCE_PARTITIONS, SourcePartitions(self.backlog))

    def backlog(self):
        """Ids due by the pace and not emitted yet, and those to replay: what a held-back spout owes."""
        due = min((time.monotonic() - self.started) * self.rate, (self.ids - self.next) / self.step + self.emitted)
        return {f"ids-{self.task}": max(0, int(due) - self.emitted) + len(self.replay)}

    def next_tuple(self):
        now = time.monotonic()
        if now - self.flushed_at >= FLUSH_SECS:
            self.flush()
            self.read_rate(now)
        if self.replay:
            i = self.replay.pop()
        elif self.next < self.ids and self.emitted < (now - self.started) * self.rate:
            i = self.next
            self.next += self.step
            self.emitted += 1
        else:
            return
        self.emit([i], tup_id=i)

    def resume(self):
        """A task restarted (its process moved or resized) goes on from its file: what it had emitted and not
        seen acked is replayed."""
        try:
            with open(os.path.join(self.out, f"acked-{self.task}.json")) as f:
                done = json.load(f)
        except FileNotFoundError:
            return
        self.acked = set(done["acked"])
        self.next = self.first + done["emitted"] * self.step
        self.replay = [i for i in range(self.first, self.next, self.step) if i not in self.acked]

    def read_rate(self, now):
        try:
            with open(self.rate_file) as f:
                rate = float(f.read())
        except (FileNotFoundError, ValueError):
            return
        if rate != self.rate:  # the new pace from now on
            self.started, self.emitted, self.rate = now, 0, rate

    def ack(self, tup_id):
        self.acked.add(tup_id)

    def fail(self, tup_id):
        self.replay.append(tup_id)

    def close(self):
        self.flush()

    def flush(self):
        path = os.path.join(self.out, f"acked-{self.task}.json")
        with open(path + ".tmp", "w") as f:
            json.dump({"emitted": (self.next - self.first) // self.step, "acked": sorted(self.acked)}, f)
        os.replace(path + ".tmp", path)
        self.flushed_at = time.monotonic()


class SlowSink(Bolt):
    """Waits ``health.sleep.ms`` per tuple (an I/O-bound call), then acks."""

    def initialize(self, config, context):
        self.sleep = float(config["health.sleep.ms"]) / 1000.0
        self.sleep_file = os.path.join(config["health.out.dir"], "sleep.ms")
        self.read_at = 0.0

    def process(self, tup):
        now = time.monotonic()
        if now - self.read_at >= FLUSH_SECS:
            self.read_at = now
            try:
                with open(self.sleep_file) as f:
                    self.sleep = float(f.read()) / 1000.0
            except (FileNotFoundError, ValueError):
                pass
        time.sleep(self.sleep)


builder = TopologyBuilder("paced")
ids = builder.add_spout("ids", PacedIds, par=1)
builder.add_bolt("sink", SlowSink, par=1, inputs={ids: Grouping.SHUFFLE})
builder.set_config({"topology.reliability.mode": "ATLEAST_ONCE", "health.ids": 6000, "health.rate": 1000,
                    "health.sleep.ms": 2, "squall.health.interval.secs": 2, "squall.chaining": "off"})
topology = builder.build()
