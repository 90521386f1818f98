"""Test topology for map-side combining: words -> a count bolt that declares ``combine`` (fields grouping on
the word, two tasks), and a tally that takes the same words shuffled (never combined)."""
from __future__ import annotations

from squall import Bolt, Grouping, Spout, TopologyBuilder


class Words(Spout):
    outputs = ["word", "n"]


class Count(Bolt):
    @staticmethod
    def combine(a, b):
        return [a[0], a[1] + b[1]]


class Tally(Bolt):
    pass


builder = TopologyBuilder("rt_combine")
w = builder.add_spout("words", Words, par=1)
builder.add_bolt("count", Count, par=2, inputs={w: Grouping.fields("word")})
builder.add_bolt("tally", Tally, par=1, inputs={w: Grouping.SHUFFLE})
builder.set_config({"topology.workers": 1})
topology = builder.build()
