"""read -> parse -> enrich, each asking for 1.5 cpu at parallelism 2 (issue 30): chained into one
process per task, it asked for 4.5 cpu that one Python process cannot use, and default packing refused
it. ``read`` emits sentence ``i`` of ``squall.testing.words`` for ever; ``parse`` splits it into words;
``enrich`` adds each word's length."""
from typing import Mapping

from squall import Bolt, Grouping, Spout, TopologyBuilder, TopologyContext, Tuple
from squall.testing.words import sentence


class Read(Spout):
    outputs = ["sentence"]

    def initialize(self, config: Mapping[str, object], context: TopologyContext) -> None:
        self.next = 0

    def next_tuple(self) -> None:
        self.emit([sentence(self.next)])
        self.next += 1


class Parse(Bolt):
    outputs = ["word"]

    def process(self, tup: Tuple) -> None:
        for word in tup["sentence"].split():
            self.emit([word], anchors=[tup])


class Enrich(Bolt):
    outputs = ["word", "length"]

    def process(self, tup: Tuple) -> None:
        self.emit([tup["word"], len(tup["word"])], anchors=[tup])


CPU = {"squall.component.cpu": 1.5}
builder = TopologyBuilder("chain_pipeline")
read = builder.add_spout("read", Read, par=2, config=CPU)
parse = builder.add_bolt("parse", Parse, par=2, inputs={read: Grouping.SHUFFLE}, config=CPU)
builder.add_bolt("enrich", Enrich, par=2, inputs={parse: Grouping.SHUFFLE}, config=CPU)
topology = builder.build()
