"""The windows end-to-end tests' input, their windowed bolts' recording, and the same computations in
plain Python (the reference the tests compare against).

Input: ``events(n)``, ``(id, key, amount, ts)`` in emit order: event times 0.75 s apart (exact in binary), neighbours
swapped every 7th tuple (out of order within the lag), every 50th tuple stamped 40 s back (late), two in
every 50 stamped exactly at the watermark (not late) and just below it (late), then
one tuple stamped far ahead that closes every earlier window (``FLUSH_TS``).
"""
import json
import os
from collections import defaultdict

from squall import ReliableSpout

FLUSH_TS = 1e6
KEYS = 5
LAG = 3.0  # the event-time bolts' lag


def events(n):
    out = []
    largest = 0.0
    for i in range(n - 1):
        ts = round(i * 0.75, 3)
        if i % 7 == 1:
            ts = round((i + 1) * 0.75, 3)
        elif i % 7 == 2:
            ts = round((i - 1) * 0.75, 3)
        if i % 50 == 49:
            ts = round(ts - 40, 3)
        elif i % 50 == 24:
            ts = round(largest - LAG, 3)  # exactly the watermark: not late
        elif i % 50 == 25:
            ts = round(largest - LAG - 0.25, 3)  # just below it: late
        largest = max(largest, ts)
        out.append((i, f"k{i % KEYS}", i % 13 + 1, ts))
    out.append((n - 1, "flush", 0, FLUSH_TS))
    return out


class Events(ReliableSpout):
    """``events(e2e.events)`` at ``e2e.rate`` a second; at least once with ids, and every acked id goes
    to ``acked-<task>.log``."""

    outputs = ["id", "key", "amount", "ts"]

    def initialize(self, config, context):
        self.todo = events(config["e2e.events"])
        self.every = 1.0 / config["e2e.rate"]
        self.reliable = config["topology.reliability.mode"] == "ATLEAST_ONCE"
        self.acked = open(os.path.join(config["e2e.out.dir"], f"acked-{context.get_task_id()}.log"), "a",
                          buffering=1)
        self.next_at = None

    def next_tuple(self):
        import time

        now = time.monotonic()
        if self.next_at is None:
            self.next_at = now
        while self.todo and now >= self.next_at:
            values = self.todo.pop(0)
            self.emit(list(values), tup_id=values[0] if self.reliable else None)
            self.next_at += self.every

    def on_ack(self, tup_id):
        self.acked.write(f"{tup_id}\n")


class Recording:
    """Mixed into a windowed bolt: each window it processes is a JSON line of ``<component>-<task>.jsonl``."""

    def initialize(self, config, context):
        name = f"{context.get_component_id()}-{context.get_task_id()}-{os.getpid()}.jsonl"
        self.record = open(os.path.join(config["e2e.out.dir"], name), "a", buffering=1)

    def write(self, window, **fields):
        self.record.write(json.dumps({"start": window.start, "end": window.end, **fields}) + "\n")


def read_windows(out_dir, component):
    """Every window line the tasks of ``component`` wrote (any process)."""
    lines = []
    for name in sorted(os.listdir(out_dir)):
        if name.startswith(f"{component}-") and name.endswith(".jsonl"):
            with open(os.path.join(out_dir, name)) as f:
                lines += [json.loads(line) for line in f if line.endswith("\n")]
    return lines


# the same computations in plain Python ------------------------------------------------------------
def not_late(evs, lag):
    """(kept, late): a tuple is late when its time is below the watermark (largest so far - lag)."""
    kept, late, largest = [], [], None
    for e in evs:
        if largest is not None and e[3] < largest - lag:
            late.append(e)
        else:
            kept.append(e)
        largest = e[3] if largest is None else max(largest, e[3])
    return kept, late, largest - lag


def time_windows(evs, length, every, lag):
    """{(start, end): [events]} of every non-empty window the final watermark has closed, and the late."""
    kept, late, mark = not_late(evs, lag)
    windows = defaultdict(list)
    for e in kept:
        k = int(e[3] // every)
        for w in range(k, k + round(length / every)):
            start, end = round(w * every - length + every, 9), round((w + 1) * every, 9)
            if start <= e[3] < end and end <= mark:
                windows[(start, end)].append(e)
    return dict(windows), late


def count_windows(evs, length, every):
    """{(start, end): [events]} of count windows over arrival order, first windows partial."""
    windows = {}
    for end in range(every, len(evs) + 1, every):
        start = max(0, end - length)
        windows[(start, end)] = evs[start:end]
    return windows


def sums(evs):
    out = defaultdict(int)
    for e in evs:
        out[e[1]] += e[2]
    return dict(out)
