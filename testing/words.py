"""A replayable word source for exactly-once tests, the partner of ``squall.testing.sinks``.

Sentence ``i`` is a pure function of ``i``, so the counts a run must end with are known
(``expected``). ``Sentences`` is a ``StatefulSpout`` whose position is its state: task k of n emits
sentences k, k + n, ... below ``testing.sentences``, paced at ``testing.rate`` a second (or at the rate
``set_rate`` writes to the file ``testing.rate.file`` names, while running), and after a
rollback it emits again from the position of the checkpoint it was restored to. ``Split`` emits each
word. ``counting_topology`` joins them to ``CommittedCounts`` by a fields grouping on the word: after any
SIGKILL or rescale, ``committed_counts`` equals ``expected`` or shows the difference.
"""
from __future__ import annotations

import os
import time
from collections import Counter
from typing import Mapping, Optional

from squall.component import Bolt, TopologyContext, Tuple
from squall.stateful import KeyValueState, StatefulSpout
from squall.stream import Grouping
from squall.testing.sinks import OUT_KEY, CommittedCounts
from squall.topology import Topology, TopologyBuilder

SENTENCES_KEY = "testing.sentences"
RATE_KEY = "testing.rate"  # sentences a second, per spout task
RATE_FILE_KEY = "testing.rate.file"  # a file whose number, once written (set_rate), replaces the rate


class Pace:
    """``rate`` emits a second, or the number in ``file`` once one is written there (read at most every
    0.2 s): a test injects its faults at a gentle pace, then lets the rest go at full speed (``inf``)."""

    def __init__(self, rate: float, file: Optional[str] = None):
        self.interval = 1.0 / rate
        self.file = file
        self.next_at = self.read_at = time.monotonic()

    def due(self) -> bool:
        now = time.monotonic()
        if self.file is not None and now >= self.read_at:
            self.read_at = now + 0.2
            try:
                with open(self.file) as f:
                    self.interval = 1.0 / float(f.read())
            except (FileNotFoundError, ValueError, ZeroDivisionError):
                pass
        return now >= self.next_at

    def emitted(self) -> None:
        # behind after a pause (a restore): catch up for at most a second, not in one burst
        self.next_at = max(self.next_at + self.interval, time.monotonic() - 1.0)


def set_rate(file: str, rate: float) -> None:
    """Write ``rate`` (emits a second per task; ``float("inf")``: unpaced) where ``Pace`` reads it."""
    with open(file + ".tmp", "w") as f:
        f.write(repr(rate))
    os.replace(file + ".tmp", file)


def sentence(i: int) -> str:
    """Sentence ``i``: one to five of 500 words."""
    return " ".join(f"w{(i * 7 + k * 131) % 500}" for k in range(1 + i % 5))


def expected(n: int) -> Counter:
    """The word counts of sentences ``0 .. n - 1``."""
    counts: Counter = Counter()
    for i in range(n):
        counts.update(sentence(i).split())
    return counts


class Sentences(StatefulSpout):
    outputs = ["sentence"]

    def initialize(self, config: Mapping[str, object], context: TopologyContext) -> None:
        tasks = sorted(context.get_component_tasks(context.get_component_id()))
        self.index, self.par = tasks.index(context.get_task_id()), len(tasks)
        self.total = int(str(config[SENTENCES_KEY]))
        file = config.get(RATE_FILE_KEY)
        self.pace = Pace(float(str(config[RATE_KEY])), str(file) if file else None)

    def init_state(self, state: KeyValueState) -> None:
        self.state = state

    def next_tuple(self) -> None:
        if not self.pace.due():
            return
        i = self.state.get("next", self.index)
        if i < self.total:
            self.emit([sentence(i)])
            self.state.put("next", i + self.par)
            self.pace.emitted()


class Split(Bolt):
    outputs = ["word"]

    def process(self, tup: Tuple) -> None:
        for word in tup["sentence"].split():
            self.emit([word])


def counting_topology(name: str, sentences: int, rate: float, out: Optional[str] = None,
                      config: Optional[Mapping[str, object]] = None) -> Topology:
    """sentences (par 2) -> split (shuffle, par 2) -> count (``CommittedCounts``, fields on the word, par 2)
    at EFFECTIVELY_ONCE, round-robin over two containers; ``out`` is the sink's folder (else give
    ``testing.out.dir`` at submit); ``config`` adds to or overrides the topology's config."""
    builder = TopologyBuilder(name)
    spout = builder.add_spout("sentences", Sentences, par=2)
    split = builder.add_bolt("split", Split, par=2, inputs={spout: Grouping.SHUFFLE})
    builder.add_bolt("count", CommittedCounts, par=2, inputs={split: Grouping.fields("word")})
    settings: dict = {"squall.packing.algorithm": "roundrobin", "topology.workers": 2,
                      "topology.reliability.mode": "EFFECTIVELY_ONCE",
                      "topology.state.checkpoint.interval.secs": 0.5, SENTENCES_KEY: sentences, RATE_KEY: rate}
    if out is not None:
        settings[OUT_KEY] = out
    builder.set_config({**settings, **(config or {})})
    return builder.build()
