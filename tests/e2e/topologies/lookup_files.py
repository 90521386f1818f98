"""Words mapped through a shipped lookup table (``--files table.txt#lookup``), for the shipped-files tests.

The table is ``word=value`` lines. Every task writes what it read at ``initialize`` to
``read-<task>.json`` and what ``on_file_update`` gave it to ``updated-<task>-<version>.json`` (the version
is the path's folder). The spout emits every word of ``WORDS`` each ``e2e.round.secs`` (at most
``e2e.rounds`` rounds); ``lookup`` maps each through the table it has loaded and reloads it in
``on_file_update``; ``record`` (chained after ``lookup``: same parallelism, shuffle) appends ``word value
version`` lines to ``records-<task>.txt``. Config: ``e2e.out.dir``.
"""
import json
import os
import time

from squall import Bolt, Grouping, Spout, TopologyBuilder

WORDS = ["alpha", "beta", "gamma", "delta"]


def read_table(path):
    with open(path) as f:
        return dict(line.strip().split("=", 1) for line in f if line.strip())


def version_of(path):
    """The version folder of a shipped file's path (``.../<alias>/<version>/<name>``)."""
    return int(os.path.basename(os.path.dirname(path)))


def write_json(folder, name, data):
    path = os.path.join(folder, name)
    with open(path + ".tmp", "w") as f:
        json.dump(data, f)
    os.replace(path + ".tmp", path)


class Reporting:
    """What every component of this topology does with the shipped file."""

    def report_read(self, config, context):
        self.out_dir = config["e2e.out.dir"]
        self.context = context
        path = context.get_file("lookup")
        with open(path) as f:
            text = f.read()
        write_json(self.out_dir, f"read-{context.get_task_id()}.json",
                   {"component": context.get_component_id(), "path": path, "text": text})

    def on_file_update(self, alias, path):
        with open(path) as f:
            text = f.read()
        write_json(self.out_dir, f"updated-{self.context.get_task_id()}-{version_of(path)}.json",
                   {"component": self.context.get_component_id(), "alias": alias, "path": path, "text": text,
                    "get_file": self.context.get_file(alias)})


class Words(Reporting, Spout):
    outputs = ["word"]

    def initialize(self, config, context):
        self.report_read(config, context)
        self.every = config["e2e.round.secs"]
        self.rounds_left = config["e2e.rounds"]
        self.next_at = time.monotonic()

    def next_tuple(self):
        if self.rounds_left and time.monotonic() >= self.next_at:
            for word in WORDS:
                self.emit([word])
            self.rounds_left -= 1
            self.next_at += self.every


class Lookup(Reporting, Bolt):
    outputs = ["word", "value", "version"]

    def initialize(self, config, context):
        self.report_read(config, context)
        self.load(context.get_file("lookup"))

    def load(self, path):
        self.table, self.version = read_table(path), version_of(path)

    def on_file_update(self, alias, path):
        super().on_file_update(alias, path)
        self.load(path)

    def process(self, tup):
        self.emit([tup["word"], self.table[tup["word"]], self.version])


class Record(Reporting, Bolt):
    def initialize(self, config, context):
        self.report_read(config, context)
        self.out = open(os.path.join(self.out_dir, f"records-{context.get_task_id()}.txt"), "a", buffering=1)

    def process(self, tup):
        self.out.write(f"{tup['word']} {tup['value']} {tup['version']}\n")

    def close(self):
        self.out.close()


builder = TopologyBuilder("lookup_files")
words = builder.add_spout("words", Words, par=1)
lookup = builder.add_bolt("lookup", Lookup, par=2, inputs={words: Grouping.SHUFFLE})
builder.add_bolt("record", Record, par=2, inputs={lookup: Grouping.SHUFFLE})
builder.set_config({"topology.workers": 1, "e2e.round.secs": 0.2, "e2e.rounds": 3000})
topology = builder.build()
