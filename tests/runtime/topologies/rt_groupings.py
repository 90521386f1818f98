"""Every grouping from one source, for routing tests."""
from squall import Bolt, CustomGrouping, Grouping, Spout, Stream, TopologyBuilder


class Src(Spout):
    outputs = [Stream(["key", "n"]), Stream(["key", "n"], name="direct", direct=True)]


class Sink(Bolt):
    pass


class HighestTask(CustomGrouping):
    def prepare(self, context, component, stream, target_tasks):
        self.target = max(target_tasks)

    def choose_tasks(self, values):
        return [self.target]


b = TopologyBuilder("rt_groupings")
src = b.add_spout("src", Src)
b.add_bolt("shuffle", Sink, par=3, inputs={src: Grouping.SHUFFLE})
b.add_bolt("fields", Sink, par=3, inputs={src: Grouping.fields("key")})
b.add_bolt("all", Sink, par=2, inputs={src: Grouping.ALL})
b.add_bolt("glob", Sink, par=3, inputs={src: Grouping.GLOBAL})
b.add_bolt("local", Sink, par=4, inputs={src: Grouping.LOCAL_OR_SHUFFLE})
b.add_bolt("pkey", Sink, par=3, inputs={src: Grouping.partial_key("key")})
b.add_bolt("custom", Sink, par=3, inputs={src: Grouping.custom(HighestTask())})
b.add_bolt("direct_sink", Sink, par=2, inputs={src["direct"]: Grouping.DIRECT})
topology = b.build()
