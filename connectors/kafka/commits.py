"""The effectively-once sink's bookkeeping, pure: which records wait for which checkpoint, which to
commit now, which a recovery must still commit, and the commit markers.

Records of a checkpoint period are buffered in memory; at ``pre_save(c)`` they go into the task's state
under the task's *entry* (one state key per transactional id, so a rescale moves an entry whole to one
new task). An entry is ``{"tid", "owner", "since", "checkpoints": [[c, [[key, value], ...]], ...]}``:

- ``tid``: the transactional id whose producer commits the entry's records (fenced before a recovery);
- ``owner``: the name its commit markers carry (the tid and a fresh nonce per ``init_state``, so a
  marker of an earlier run or incarnation never stands for this one's checkpoints);
- ``since``: where, in the commits topic's partition of ``owner``, a recovery starts looking for them
  (the end of that partition when the owner was made, then the offset of its last marker), so a
  recovery reads about one checkpoint interval of markers, not the whole topic.

A commit writes the records of every checkpoint ``<= c`` in the entry and a marker record ``owner -> c``
to the commits topic in one Kafka transaction: the marker is visible exactly when the records are.
"""
from __future__ import annotations

import json
import zlib
from typing import Iterable, Optional

ENTRY = "kafka.bolt.pending"  # a state key is (ENTRY, tid)


def entry_key(tid: str) -> tuple:
    return (ENTRY, tid)


def is_entry_key(key: object) -> bool:
    return isinstance(key, tuple) and len(key) == 2 and key[0] == ENTRY


def new_entry(tid: str, owner: str, since: int) -> dict:
    return {"tid": tid, "owner": owner, "since": since, "checkpoints": []}


def add(entry: dict, checkpoint_id: int, records: list) -> None:
    """Put a checkpoint period's records (``[(key, value)]``) in the entry."""
    entry["checkpoints"].append([checkpoint_id, [list(r) for r in records]])


def due(entry: dict, upto: int, committed: int = 0) -> tuple:
    """``(last checkpoint, records)`` of the checkpoints in ``(committed, upto]``, in checkpoint order;
    ``(None, [])`` when there is none."""
    chosen = sorted((c for c in entry["checkpoints"] if committed < c[0] <= upto), key=lambda c: c[0])
    if not chosen:
        return None, []
    return chosen[-1][0], [r for _, records in chosen for r in records]


def drop(entry: dict, upto: int) -> None:
    """Forget the checkpoints ``<= upto`` (committed)."""
    entry["checkpoints"] = [c for c in entry["checkpoints"] if c[0] > upto]


def marker_partition(owner: str, partitions: int) -> int:
    """The commits topic's partition an owner's markers go to (the same in every process)."""
    return zlib.crc32(owner.encode("utf-8")) % partitions


def marker(owner: str, checkpoint_id: int) -> tuple:
    """A commit marker record ``(key, value)``: ``owner`` committed every checkpoint up to ``checkpoint_id``."""
    return owner.encode("utf-8"), json.dumps({"checkpoint": checkpoint_id}).encode("utf-8")


def committed_upto(owner: str, records: Iterable[tuple]) -> int:
    """The highest checkpoint ``owner``'s markers among ``records`` (``(key, value)``) say is committed
    (0: none)."""
    want = owner.encode("utf-8")
    best = 0
    for key, value in records:
        if key == want:
            best = max(best, _checkpoint(value))
    return best


def _checkpoint(value: Optional[bytes]) -> int:
    try:
        return int(json.loads(value)["checkpoint"])
    except (TypeError, ValueError, KeyError):
        return 0
