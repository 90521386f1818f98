"""A two-phase counting sink for effectively-once tests, and the reader of what it committed.

``CommittedCounts`` counts a key of each tuple in its ``KeyValueState``; at ``pre_save`` it keeps a copy
of the counts for that checkpoint, and at ``post_save`` (the checkpoint is complete) writes that copy to
``count-<task>.json`` in the folder its ``testing.out.dir`` key names, with the checkpoint's id: only
output of complete checkpoints is ever seen (docs/state.md, a two-phase sink). After SIGKILLs and
rescales, ``committed_counts(folder)`` adds up what every task committed for the newest checkpoint: a
tuple counted twice or lost shows as a difference from the expected counts.
"""
from __future__ import annotations

import glob
import json
import os
from collections import Counter
from typing import Any, Mapping

from squall.component import TopologyContext, Tuple
from squall.stateful import KeyValueState, StatefulBolt

OUT_KEY = "testing.out.dir"


class CommittedCounts(StatefulBolt):
    """Counts ``key(tup)`` (by default its first value) at EFFECTIVELY_ONCE, committing at each checkpoint."""

    def key(self, tup: Tuple) -> Any:
        return tup.values[0]

    def initialize(self, config: Mapping[str, Any], context: TopologyContext) -> None:
        self.out = os.path.join(config[OUT_KEY], f"count-{context.get_task_id()}.json")

    def init_state(self, state: KeyValueState) -> None:
        self.state = state
        self.pending: dict = {}

    def process(self, tup: Tuple) -> None:
        key = self.key(tup)
        self.state.put(key, self.state.get(key, 0) + 1)

    def pre_save(self, checkpoint_id: int) -> None:
        self.pending[checkpoint_id] = dict(self.state.items())

    def post_save(self, checkpoint_id: int) -> None:
        counts = self.pending.pop(checkpoint_id, None)
        for older in [c for c in self.pending if c < checkpoint_id]:
            del self.pending[older]
        if counts is None:
            return
        tmp = f"{self.out}.tmp"
        with open(tmp, "w") as f:
            json.dump({"checkpoint": checkpoint_id, "counts": counts}, f)
        os.replace(tmp, self.out)


def committed_counts(folder: str) -> tuple:
    """(checkpoint, Counter) of the newest checkpoint the ``CommittedCounts`` tasks writing to ``folder``
    have committed (0 and nothing before the first)."""
    files = []
    for path in glob.glob(os.path.join(folder, "count-*.json")):
        with open(path) as f:
            files.append(json.load(f))
    if not files:
        return 0, Counter()
    newest = max(f["checkpoint"] for f in files)
    total: Counter = Counter()
    for f in files:
        if f["checkpoint"] == newest:
            total.update(f["counts"])
    return newest, total
