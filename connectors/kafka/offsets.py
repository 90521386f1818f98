"""At-least-once bookkeeping of one Kafka partition: Storm's KafkaSpout offset manager, pure (time passed in).

The spout reads a partition in offset order and emits each record with an id. Its *committable* offset
(what is committed to the group and saved at a checkpoint: where a restart reads again) only moves past
records whose trees were acked: it is the lowest open offset, or the position when none is open. Offsets
the partition skips (compacted records, transaction markers) are never open, so they do not hold it back.

A failed record is re-emitted after an exponential backoff (``first`` seconds, times ``factor`` each
further failure, at most ``longest``); it keeps its offset open meanwhile. The record's values are kept
until it is acked, so a retry needs no seek (the number open is bounded by the spout: it pauses a
partition with ``kafka.max.uncommitted.per.partition`` records open).
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Dict, List, Tuple


@dataclass(frozen=True)
class Backoff:
    """Waits before a failed record is emitted again: ``first * factor ** (failures - 1)``, at most ``longest``."""

    first: float = 0.5
    factor: float = 2.0
    longest: float = 30.0

    def delay(self, failures: int) -> float:
        return min(self.first * self.factor ** max(failures - 1, 0), self.longest)


class PartitionOffsets:
    """One partition's open records, retries and committable offset."""

    def __init__(self, start: int, backoff: Backoff = Backoff()):
        self.position = start  # the next offset to read
        self.backoff = backoff
        self.open: Dict[int, object] = {}  # offset -> values, in offset order (records are read in order)
        self.failures: Dict[int, int] = {}  # offset -> times failed
        self.retries: List[Tuple[float, int]] = []  # heap of (due, offset)
        self.waiting: set = set()  # offsets failed and not yet emitted again

    def emitted(self, offset: int, values: object) -> None:
        """Record ``offset`` was read and emitted with an id."""
        self.open[offset] = values
        self.position = max(self.position, offset + 1)

    def skipped(self, offset: int) -> None:
        """Record ``offset`` was read and needs no ack (it went to the error stream)."""
        self.position = max(self.position, offset + 1)

    def ack(self, offset: int) -> bool:
        """Its tree completed; False for an offset that is not open (an ack from before a rollback)."""
        if offset not in self.open:
            return False
        del self.open[offset]
        self.failures.pop(offset, None)
        self.waiting.discard(offset)
        return True

    def fail(self, offset: int, now: float) -> bool:
        """Its tree failed or timed out: emitted again after the backoff. False when not open."""
        if offset not in self.open or offset in self.waiting:
            return False
        failures = self.failures.get(offset, 0) + 1
        self.failures[offset] = failures
        self.waiting.add(offset)
        heapq.heappush(self.retries, (now + self.backoff.delay(failures), offset))
        return True

    def due(self, now: float) -> List[Tuple[int, object]]:
        """``(offset, values)`` of the failed records whose backoff is over, in the order they fell due;
        they count as emitted again (open, no longer waiting)."""
        out = []
        while self.retries and self.retries[0][0] <= now:
            _, offset = heapq.heappop(self.retries)
            if offset in self.waiting:
                self.waiting.discard(offset)
                out.append((offset, self.open[offset]))
        return out

    @property
    def committable(self) -> int:
        """The offset a restart reads from: every record below it was acked (or skipped)."""
        for offset in self.open:
            return offset
        return self.position

    def __len__(self) -> int:
        """Records emitted and not yet acked."""
        return len(self.open)
