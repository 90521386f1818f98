"""The components of bench/connectors.py's topologies (kafka_tally.py, rows_files.py, rows_tally.py).

Rows (a spout: ``bench.rows`` prebuilt rows, emitted in bursts with ``emit_many``); Tally (a bolt, one
task, that counts what it gets and notes the wall time at which its count passed 10 % and 90 % of
``bench.total``, written to ``tally.json`` in ``bench.out.dir`` as each mark is passed).
"""
import json
import os
import time

from squall import Bolt, Spout

ROW_FIELDS = ["id", "word", "amount", "ts"]
BURST = 500


def row(i):
    return [i, f"word{i % 1000}", (i % 97) * 1.25, 1_700_000_000.0 + i / 1000.0]


class Rows(Spout):
    outputs = ROW_FIELDS

    def initialize(self, config, context):
        self.total = int(config["bench.rows"])
        self.table = [row(i) for i in range(min(self.total, 100_000))]
        self.i = 0

    def next_tuple(self):
        if self.i >= self.total:
            return
        n = min(BURST, self.total - self.i)
        start = self.i % len(self.table)
        chunk = self.table[start:start + n]
        if len(chunk) < n:
            chunk += self.table[:n - len(chunk)]
        self.emit_many(chunk)
        self.i += n


class Tally(Bolt):
    def initialize(self, config, context):
        self.path = os.path.join(config["bench.out.dir"], "tally.json")
        total = int(config["bench.total"])
        self.marks = [total // 10, total * 9 // 10]
        self.passed = {}
        self.count = 0

    def process(self, tup):
        self._add(1)

    def process_batch(self, batch):
        self._add(len(batch.values))

    def _add(self, n):
        self.count += n
        if self.marks and self.count >= self.marks[0]:
            self.passed[self.marks.pop(0)] = [self.count, time.time()]
            tmp = self.path + ".tmp"
            with open(tmp, "w") as f:
                json.dump(self.passed, f)
            os.replace(tmp, self.path)
