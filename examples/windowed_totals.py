"""Windowed totals: a per-key sum over the last 60 seconds, every 10 seconds, in event time.

A spout of timestamped payments (``[account, amount, ts]``; every 40th one
arrives 30 s late), and a ``WindowedBolt`` that sums each account over a
sliding window, incrementally (one ``{account: total}`` per 10 s slide, not
every tuple), with late payments on their own stream to a bolt that logs them.
Config:

- ``windowed_totals.payments``: payments the spout emits (0, the default, means
  for ever);
- ``squall.window.idle.timeout.secs``: how long a silent spout task may hold
  the watermark back.

    squall submit examples/windowed_totals.py
"""
from __future__ import annotations

import logging
import time

from squall import Bolt, Grouping, Spout, Stream, TopologyBuilder, Window, WindowedBolt

log = logging.getLogger(__name__)
ACCOUNTS = ["alice", "bob", "carol", "dave", "erin"]


class PaymentSpout(Spout):
    """Payments stamped with the clock, 200 a second per task; every 40th stamped 30 s in the past."""

    outputs = ["account", "amount", "ts"]

    def initialize(self, config, context):
        self.i = context.get_task_id()
        self.limit = config.get("windowed_totals.payments", 0) or None
        self.next_at = time.monotonic()

    def next_tuple(self):
        if (self.limit is not None and self.i >= self.limit) or time.monotonic() < self.next_at:
            return
        late = 30.0 if self.i % 40 == 0 else 0.0
        self.emit([ACCOUNTS[self.i % len(ACCOUNTS)], 1 + self.i % 9, time.time() - late])
        self.i += 1
        self.next_at += 1 / 200


class Totals(WindowedBolt):
    outputs = [Stream(["account", "total", "window_end"]), Stream(["account", "amount", "ts"], name="late")]
    window = Window.sliding(duration=60.0, every=10.0)
    timestamp_field = "ts"
    lag = 5.0
    late_stream = "late"

    def initial(self):
        return {}

    def reduce(self, totals, tup):
        totals[tup["account"]] = totals.get(tup["account"], 0) + tup["amount"]
        return totals

    def merge(self, older, newer):
        merged = dict(older)
        for account, total in newer.items():
            merged[account] = merged.get(account, 0) + total
        return merged

    def process_window(self, window):
        for account, total in sorted(window.value.items()):
            self.emit([account, total, window.end])


class Report(Bolt):
    def process(self, tup):
        if tup.stream == "late":
            log.info("late payment: %s %s (stamped %.1f)", tup["account"], tup["amount"], tup["ts"])
        else:
            log.info("%s: %s over the minute to %.0f", tup["account"], tup["total"], tup["window_end"])


builder = TopologyBuilder("windowed_totals")
payments = builder.add_spout("payments", PaymentSpout, par=2)
totals = builder.add_bolt("totals", Totals, par=2, inputs={payments: Grouping.fields("account")})
builder.add_bolt("report", Report, inputs=[totals, totals["late"]])
builder.set_config({"topology.workers": 1, "topology.message.timeout.secs": 90})
topology = builder.build()
