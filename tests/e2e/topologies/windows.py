"""Windowed bolts of every kind over one finite input (``window_data.events``), each recording its
windows; config ``e2e.out.dir``, ``e2e.events``, ``e2e.rate``.

events -> event_tumbling (event time, lag 3, late stream) -> sink (its totals and late tuples)
       -> event_sliding (event time, incremental: one sum per key and slide)
       -> count_tumbling, count_sliding (count windows)
       -> proc_sliding (processing time)
"""
import json
import os

from window_data import LAG, Events, Recording

from squall import Bolt, Stream, TopologyBuilder, Window, WindowedBolt


class EventTumbling(Recording, WindowedBolt):
    outputs = [Stream(["key", "total", "start"]), Stream(["id", "key", "amount", "ts"], name="late")]
    window = Window.tumbling(duration=10)
    timestamp_field = "ts"
    lag = LAG
    late_stream = "late"

    def process_window(self, window):
        self.write(window, ids=sorted(t["id"] for t in window.tuples), new=sorted(t["id"] for t in window.new),
                   expired=sorted(t["id"] for t in window.expired))
        totals = {}
        for t in window.tuples:
            totals[t["key"]] = totals.get(t["key"], 0) + t["amount"]
        for key, total in sorted(totals.items()):
            self.emit([key, total, window.start])


class EventSliding(Recording, WindowedBolt):
    window = Window.sliding(duration=15, every=5)
    timestamp_field = "ts"
    lag = LAG

    def initial(self):
        return {}

    def reduce(self, acc, tup):
        acc[tup["key"]] = acc.get(tup["key"], 0) + tup["amount"]
        return acc

    def merge(self, a, b):
        out = dict(a)
        for key, total in b.items():
            out[key] = out.get(key, 0) + total
        return out

    def process_window(self, window):
        self.write(window, sums=window.value)


class IdRecorder(Recording, WindowedBolt):
    def process_window(self, window):
        self.write(window, ids=[t["id"] for t in window.tuples])


class CountTumbling(IdRecorder):
    window = Window.tumbling(count=7)


class CountSliding(IdRecorder):
    window = Window.sliding(count=6, every=3)


class ProcSliding(IdRecorder):
    window = Window.sliding(duration=0.6, every=0.3)


class Sink(Bolt):
    def initialize(self, config, context):
        self.out = open(os.path.join(config["e2e.out.dir"], f"sink-{context.get_task_id()}-{os.getpid()}.log"),
                        "a", buffering=1)

    def process(self, tup):
        self.out.write(f"{tup.stream} {json.dumps(list(tup.values))}\n")


builder = TopologyBuilder("windows")
events = builder.add_spout("events", Events)
tumbling = builder.add_bolt("event_tumbling", EventTumbling, inputs=[events])
builder.add_bolt("event_sliding", EventSliding, inputs=[events])
builder.add_bolt("count_tumbling", CountTumbling, inputs=[events])
builder.add_bolt("count_sliding", CountSliding, inputs=[events])
builder.add_bolt("proc_sliding", ProcSliding, inputs=[events])
builder.add_bolt("sink", Sink, inputs=[tumbling, tumbling["late"]])
builder.set_config({"topology.workers": 1, "e2e.events": 420, "e2e.rate": 300})
topology = builder.build()
