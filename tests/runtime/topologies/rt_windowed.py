"""ids -> threes (a windowed bolt: sums of tumbling windows of 3 tuples) -> sink, at least once."""
from squall import Bolt, Spout, TopologyBuilder, Window, WindowedBolt


class Ids(Spout):
    outputs = ["n"]


class Threes(WindowedBolt):
    outputs = ["total"]
    window = Window.tumbling(count=3)

    def process_window(self, window):
        self.emit([sum(t["n"] for t in window.tuples)])


class Sink(Bolt):
    pass


builder = TopologyBuilder("rt_windowed")
ids = builder.add_spout("ids", Ids)
threes = builder.add_bolt("threes", Threes, inputs=[ids])
builder.add_bolt("sink", Sink, inputs=[threes], config={"topology.tick.tuple.freq.secs": 0.25})
builder.set_config({"topology.reliability.mode": "ATLEAST_ONCE", "topology.tick.tuple.freq.secs": 2})
topology = builder.build()
