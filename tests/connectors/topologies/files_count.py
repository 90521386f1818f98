"""FileSpout -> a stateful per-file line count at EFFECTIVELY_ONCE, for SIGKILLs of the spout mid-run.

lines (a FileSpout over ``files.path``, text, par 2, paced at ``files_test.rate`` lines/s per task so a
kill lands mid-file) -> count (a StatefulBolt, fields on ``file``, par 2). The count is a two-phase sink:
at ``post_save`` (the checkpoint is complete) it writes the counts it held at ``pre_save`` to
``count-<task>.json`` in ``testing.out.dir`` (``squall.testing.sinks``) with the checkpoint id, so only output of complete
checkpoints is ever seen.
"""
import time

from squall import Grouping, TopologyBuilder
from squall.connectors.files import FileSpout
from squall.testing.sinks import CommittedCounts


class PacedLines(FileSpout):
    def initialize(self, config, context):
        super().initialize(config, context)
        self.interval = self.batch / config["files_test.rate"]
        self.next_at = time.monotonic()

    def next_tuple(self):
        if time.monotonic() >= self.next_at:
            self.next_at = max(self.next_at + self.interval, time.monotonic() - 1)
            super().next_tuple()


class CountLines(CommittedCounts):
    def key(self, tup):
        return tup["file"]


builder = TopologyBuilder("files_count")
lines = builder.add_spout("lines", PacedLines, par=2, config={"files.read.batch": 20, "files.format": "text"})
builder.add_bolt("count", CountLines, par=2, inputs={lines: Grouping.fields("file")})
builder.set_config({"squall.packing.algorithm": "roundrobin", "topology.workers": 2,
                    "topology.reliability.mode": "EFFECTIVELY_ONCE", "topology.state.checkpoint.interval.secs": 0.5,
                    "files.discover.interval.secs": 0.2, "files_test.rate": 2000})
topology = builder.build()
