"""Every grouping at once: one finite spout, one recording sink per grouping.

Each sink task writes ``<e2e.out.dir>/<component>-<task>.json``: the list of
[source task, n, key] it received. Config: ``e2e.out.dir``, ``e2e.tuples``.
"""
import json
import os

from squall import Bolt, Grouping, Spout, Stream, TopologyBuilder

from groupings_custom import ModuloGrouping


def key_of(n):
    return f"k{n % 13}"


class Source(Spout):
    outputs = [Stream(["key", "n"]), Stream(["n"], name="direct", direct=True)]

    def initialize(self, config, context):
        tasks = context.get_component_tasks(context.get_component_id())
        self.n = tasks.index(context.get_task_id())
        self.stride = len(tasks)
        self.limit = config["e2e.tuples"]
        self.direct_targets = context.get_component_tasks("direct_sink")

    def next_tuple(self):
        if self.n < self.limit:
            self.emit([key_of(self.n), self.n])
            self.emit([self.n], stream="direct", direct_task=self.direct_targets[self.n % 2])
            self.n += self.stride


class Recorder(Bolt):
    def initialize(self, config, context):
        self.seen = []
        self.path = os.path.join(config["e2e.out.dir"], f"{context.get_component_id()}-{context.get_task_id()}.json")
        self.dirty = False

    def process(self, tup):
        self.seen.append([tup.task, tup["n"], tup.values[0] if tup.stream == "default" else None])
        self.dirty = True

    def process_tick(self, tup):
        if self.dirty:
            with open(self.path + ".tmp", "w") as f:
                json.dump(self.seen, f)
            os.replace(self.path + ".tmp", self.path)
            self.dirty = False


builder = TopologyBuilder("groupings")
src = builder.add_spout("src", Source, par=2)
builder.add_bolt("shuffle_sink", Recorder, par=3, inputs={src: Grouping.SHUFFLE})
builder.add_bolt("fields_sink", Recorder, par=3, inputs={src: Grouping.fields("key")})
builder.add_bolt("all_sink", Recorder, par=2, inputs={src: Grouping.ALL})
builder.add_bolt("global_sink", Recorder, par=3, inputs={src: Grouping.GLOBAL})
builder.add_bolt("none_sink", Recorder, par=2, inputs={src: Grouping.NONE})
builder.add_bolt("direct_sink", Recorder, par=2, inputs={src["direct"]: Grouping.DIRECT})
builder.add_bolt("local_sink", Recorder, par=2, inputs={src: Grouping.LOCAL_OR_SHUFFLE})
builder.add_bolt("partial_sink", Recorder, par=3, inputs={src: Grouping.partial_key("key")})
builder.add_bolt("custom_sink", Recorder, par=3, inputs={src: Grouping.custom(ModuloGrouping(1))})
builder.set_config({"topology.workers": 2, "topology.tick.tuple.freq.secs": 0.3, "e2e.tuples": 600,
                    "squall.component.cpu": 0.1, "squall.component.ram.mb": 64})
topology = builder.build()
