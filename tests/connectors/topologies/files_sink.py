"""N numbered records -> FileSink (Parquet) at EFFECTIVELY_ONCE, for a SIGKILL of the sink mid-run.

numbers (a StatefulSpout, par 2: task k emits n = k, k + 2, ... below ``files_test.records``, paced at
``files_test.rate``/s per task, or unpaced once a test writes ``inf`` to the file ``testing.rate.file``
names; its position is its state) -> sink (FileSink, shuffle, par 2, Parquet
parts under ``files.path``, partitioned by ``parity``). A reader must see every n exactly once.

With ``files_test.crash.marker`` set to a path, the first sink task to get ``post_save`` of checkpoint 4 or
later creates that file and SIGKILLs its own process before committing: a crash in the commit window,
whose restore must finish the parts pending in the checkpoint's state.
"""
import os
import signal

from squall import Grouping, StatefulSpout, TopologyBuilder
from squall.connectors.files import FileSink
from squall.testing.words import RATE_FILE_KEY, Pace


class Numbers(StatefulSpout):
    outputs = ["n", "parity", "text"]

    def initialize(self, config, context):
        tasks = sorted(context.get_component_tasks(context.get_component_id()))
        self.index, self.par = tasks.index(context.get_task_id()), len(tasks)
        self.total = config["files_test.records"]
        self.pace = Pace(config["files_test.rate"] / 20, config.get(RATE_FILE_KEY))  # batches of 20 a second

    def init_state(self, state):
        self.state = state

    def next_tuple(self):
        if not self.pace.due():
            return
        self.pace.emitted()
        i = self.state.get("next", self.index)
        batch = []
        while i < self.total and len(batch) < 20:
            batch.append([i, "even" if i % 2 == 0 else "odd", f"record {i}"])
            i += self.par
        if batch:
            self.emit_many(batch)
            self.state.put("next", i)


class CrashInCommitSink(FileSink):
    def initialize(self, config, context):
        super().initialize(config, context)
        self.crash_marker = config.get("files_test.crash.marker") or None

    def post_save(self, checkpoint_id):
        if self.crash_marker and checkpoint_id >= 4 and any(isinstance(k, str) for k in self.state.keys()):
            try:
                os.close(os.open(self.crash_marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            except FileExistsError:
                pass
            else:
                os.kill(os.getpid(), signal.SIGKILL)
        super().post_save(checkpoint_id)


builder = TopologyBuilder("files_sink")
numbers = builder.add_spout("numbers", Numbers, par=2)
builder.add_bolt("sink", CrashInCommitSink, par=2, inputs={numbers: Grouping.SHUFFLE},
                 config={"files.format": "parquet", "files.partition.by": "parity"})
builder.set_config({"squall.packing.algorithm": "roundrobin", "topology.workers": 2,
                    "topology.reliability.mode": "EFFECTIVELY_ONCE", "topology.state.checkpoint.interval.secs": 0.5,
                    "files_test.records": 20000, "files_test.rate": 2000})
topology = builder.build()
