"""The streamlet end-to-end tests' input, sink, and their computations in plain Python."""
import glob
import json
import os
from collections import Counter, defaultdict

from corpus import sentence

SENTENCES = 1000
FLUSH_TS = 1e6  # each join side ends with one element stamped here: it closes every earlier window


def lines():
    return (sentence(i) for i in range(SENTENCES))


def left():
    return [[f"k{i % 4}", i * 0.5, i] for i in range(200)] + [["flush", FLUSH_TS, 0]]


def right():
    return [[f"k{j % 3}", round(j * 0.66, 2), 1000 + j] for j in range(150)] + [["flush", FLUSH_TS, 0]]


class Record:
    """A sink: each element a JSON line of ``<name>-<task>-<pid>.jsonl`` in ``e2e.out.dir``."""

    def __init__(self, name):
        self.name = name

    def setup(self, config, context):
        path = os.path.join(config["e2e.out.dir"], f"{self.name}-{context.get_task_id()}-{os.getpid()}.jsonl")
        self.out = open(path, "a", buffering=1)

    def __call__(self, element):
        self.out.write(json.dumps(element) + "\n")


def recorded(out_dir, name):
    found = []
    for path in glob.glob(os.path.join(out_dir, f"{name}-*.jsonl")):
        with open(path) as f:
            found += [json.loads(line) for line in f if line.endswith("\n")]
    return found


# plain Python ---------------------------------------------------------------------------------
def word_counts():
    return Counter(word for s in lines() for word in s.split())


def tumbling_join(length):
    out = []
    windows = defaultdict(lambda: (defaultdict(list), defaultdict(list)))
    for side, elements in ((0, left()), (1, right())):
        for key, ts, amount in elements:
            if ts < FLUSH_TS:
                start = (ts // length) * length
                windows[start][side][key].append(amount)
    for start, (lefts, rights) in windows.items():
        for key, values in lefts.items():
            for a in values:
                for b in rights.get(key, ()):
                    out.append([key, start, start + length, a, b])
    return sorted(out)


def sliding_sums(elements, length, every):
    sums = defaultdict(int)
    for key, ts, amount in elements:
        if ts < FLUSH_TS:
            k = int(ts // every)
            for w in range(k, k + int(length // every)):
                sums[(key, (w + 1) * every - length, (w + 1) * every)] += amount
    return sorted([key, start, end, total] for (key, start, end), total in sums.items())
