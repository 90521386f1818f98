"""The FileSpout's pure rules: which task reads a file, and how far a file is acked (ATLEAST_ONCE)."""
from __future__ import annotations

from typing import Dict, Set, Tuple

from squall.stateful import stable_hash


def owner(relpath: str, parallelism: int) -> int:
    """The task index (of ``parallelism``) that reads the file at ``relpath``: a stable hash of its path,
    the same in every process and run, so a parallelism change moves whole files."""
    return stable_hash([relpath]) % parallelism


class AckTracker:
    """One file's contiguous-ack position: records ``offset`` 0..k-1 are all acked, and the file is to be
    read again from byte (or row) ``position`` after them. Acks may come in any order."""

    def __init__(self, offset: int, position: int):
        self.committed: Tuple[int, int] = (offset, position)
        self.ends: Dict[int, int] = {}  # offset emitted, not yet committed -> position after it
        self.acked: Set[int] = set()
        self.eof = False  # the reader reached the end of the file

    def emitted(self, offset: int, end: int) -> None:
        self.ends[offset] = end

    def ack(self, offset: int) -> bool:
        """Record ``offset`` acked; True when the committed position moved."""
        if offset not in self.ends:
            return False
        self.acked.add(offset)
        moved = False
        while self.committed[0] in self.acked:
            o = self.committed[0]
            self.acked.discard(o)
            self.committed = (o + 1, self.ends.pop(o))
            moved = True
        return moved

    @property
    def done(self) -> bool:
        """Read to its end and every record acked."""
        return self.eof and not self.ends
