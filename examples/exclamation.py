"""The classic exclamation topology: words -> "word!!!" -> "word!!!!!!".

Written in the class DSL, the second way to declare a topology.
"""
from __future__ import annotations

from squall import Bolt, Grouping, Spout, Topology

WORDS = ["nathan", "mike", "jackson", "golda", "bertels"]


class WordSpout(Spout):
    outputs = ["word"]

    def initialize(self, config, context):
        self.i = context.get_task_id()

    def next_tuple(self):
        self.emit([WORDS[self.i % len(WORDS)]])
        self.i += 1


class ExclamationBolt(Bolt):
    outputs = ["word"]

    def process(self, tup):
        self.emit([tup["word"] + "!!!"], anchors=[tup])
        self.ack(tup)


class Exclamation(Topology):
    config = {"topology.workers": 2}
    word = WordSpout.spec(par=2)
    exclaim1 = ExclamationBolt.spec(par=2, inputs={word: Grouping.SHUFFLE})
    exclaim2 = ExclamationBolt.spec(par=2, inputs={exclaim1: Grouping.SHUFFLE})
