"""FileSpout (JSON Lines) -> FileSink (JSON Lines) at ATLEAST_ONCE, for a SIGKILL of the sink mid-run.

records (FileSpout over ``files_test.in``, par 2, paced) -> sink (FileSink into ``files_test.out``, par 2,
rolled every second on tick tuples; a tuple is acked once its part is renamed). ``files.path`` on the command
line names the input; the sink's output is ``files_test.out``.
"""
import time

from squall import Grouping, TopologyBuilder
from squall.connectors.files import FileSink, FileSpout


class PacedRecords(FileSpout):
    fields = ("n",)

    def initialize(self, config, context):
        super().initialize(config, context)
        self.interval = self.batch / config["files_test.rate"]
        self.next_at = time.monotonic()

    def next_tuple(self):
        if time.monotonic() >= self.next_at:
            self.next_at = max(self.next_at + self.interval, time.monotonic() - 1)
            super().next_tuple()


class OutSink(FileSink):
    """The sink writes to ``files_test.out`` (``files.path``, set on the command line, is the spout's)."""

    def initialize(self, config, context):
        super().initialize({**dict(config.items()), "files.path": config["files_test.out"]}, context)


builder = TopologyBuilder("files_pipe")
records = builder.add_spout("records", PacedRecords, par=2,
                            config={"files.format": "jsonl", "files.read.batch": 20})
builder.add_bolt("sink", OutSink, par=2, inputs={records: Grouping.SHUFFLE},
                 config={"files.format": "jsonl", "files.roll.interval.secs": 1, "topology.tick.tuple.freq.secs": 0.5})
builder.set_config({"squall.packing.algorithm": "roundrobin", "topology.workers": 2,
                    "topology.reliability.mode": "ATLEAST_ONCE", "topology.max.spout.pending": 2000,
                    "files.discover.interval.secs": 0.2, "files_test.rate": 2000})
topology = builder.build()
