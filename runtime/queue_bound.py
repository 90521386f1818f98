"""How long tuples may wait for a bolt: the stream manager's bound on each local bolt's queue.

Byte water marks alone do not bound waiting for small tuples (half a MiB is
~25,000 words), and a tuple count alone cannot suit a bolt doing 500,000
tuples/s and one doing 470. So the bound is in time: the stream manager counts
the tuples it has handed to a local instance (DATA headers carry the count)
and the instance reports the tuples it has processed (CONTROL ``consumed``);
the queue is over its bound when what is queued would take the instance
longer than ``max_wait`` seconds at its measured rate, and back under it at
half that. Pure: the time is an argument.
"""
from __future__ import annotations

from typing import Optional

RATE_WEIGHT = 0.3  # weight of the newest rate sample


class QueueBound:
    def __init__(self, max_wait: float, floor: int = 64, unmeasured: int = 1000):
        self.max_wait = max_wait
        self.floor = floor  # never throttle for fewer queued tuples than this
        self.unmeasured = unmeasured  # the bound before the instance's rate is known (a batch)
        self.queued = 0
        self.rate: Optional[float] = None  # tuples/s the instance processes when it has work
        self._last_report: Optional[float] = None
        self.over = False

    def limit(self) -> float:
        if self.rate is None:
            return self.unmeasured
        return max(self.floor, self.rate * self.max_wait)

    def delivered(self, tuples: int) -> bool:
        """Tuples handed to the instance; True when the queue just went over its bound."""
        self.queued += tuples
        if not self.over and self.queued > self.limit():
            self.over = True
            return True
        return False

    def consumed(self, tuples: int, now: float) -> bool:
        """The instance processed ``tuples``; True when the queue just went back under half its bound."""
        if self._last_report is not None and now > self._last_report and self.queued > 0:
            sample = tuples / (now - self._last_report)
            self.rate = sample if self.rate is None else (1 - RATE_WEIGHT) * self.rate + RATE_WEIGHT * sample
        self._last_report = now
        self.queued = max(0, self.queued - tuples)
        if self.over and self.queued <= self.limit() / 2:
            self.over = False
            return True
        return False
