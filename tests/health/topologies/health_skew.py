"""Keys with one hot key in front of an I/O-bound bolt, fields grouped (at most once): the health
manager's skew, with its hot keys sampled. Used by tests/health/test_cli_health.py.

Config: ``skew.rate`` (keys a second), ``skew.hot.share`` (the share of them that is ``"hot"``; the rest
are ``"k<n>"``, each once), ``skew.sleep.ms`` (the bolt's sleep per tuple).
"""
import time

from squall import Bolt, Grouping, Spout, TopologyBuilder


class Keys(Spout):
    outputs = ["key"]

    def initialize(self, config, context):
        self.rate = float(config["skew.rate"])
        self.every = round(1 / (1 - float(config["skew.hot.share"])))  # one cold key in ``every``
        self.started = time.monotonic()
        self.emitted = 0

    def next_tuple(self):
        if self.emitted < (time.monotonic() - self.started) * self.rate:
            self.emit(["hot" if self.emitted % self.every else f"k{self.emitted}"])
            self.emitted += 1


class Slow(Bolt):
    def initialize(self, config, context):
        self.sleep = float(config["skew.sleep.ms"]) / 1000.0

    def process(self, tup):
        time.sleep(self.sleep)


builder = TopologyBuilder("skewed")
keys = builder.add_spout("keys", Keys)
builder.add_bolt("slow", Slow, par=2, inputs={keys: Grouping.fields("key")})
builder.set_config({"skew.rate": 600, "skew.hot.share": 0.9, "skew.sleep.ms": 2, "squall.chaining": "off"})
topology = builder.build()
