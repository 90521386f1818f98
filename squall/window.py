"""Windows: what a ``WindowedBolt`` declares (``Window``) and what ``process_window`` gets (``WindowView``).

A window is made of *panes*: the largest length that divides both the window
and its slide (``every``), so one slide long when the window is a whole
number of slides. Pane ``p`` of a duration window is
``[p * pane, (p + 1) * pane)``; the window ending with pane ``w`` is the
``size`` panes up to it, half-open ``[(w - size + 1) * pane, (w + 1) * pane)``,
and windows end every ``step`` panes, at multiples of their slide from 0. So
each tuple is stored once (in its pane) whatever the overlap. A tumbling
window is one pane long. Count windows count tuples in their order of arrival
at the task (tuple *i*, from 0, is in pane ``i // pane``), and their
``start``/``end`` are those arrival indexes.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Optional

_NS = 1e9  # durations are compared in whole nanoseconds (3 * 0.1 is 0.30000000000000004)


@dataclass(frozen=True)
class Window:
    """A window declaration: build one with ``Window.tumbling`` or ``Window.sliding``."""

    length: float  # seconds (duration) or tuples (count)
    every: float
    by_count: bool

    @classmethod
    def tumbling(cls, duration: Optional[float] = None, count: Optional[int] = None) -> "Window":
        """Back-to-back windows of ``duration`` seconds or ``count`` tuples."""
        length = cls._length("Window.tumbling", duration, count)
        return cls(length, length, count is not None)

    @classmethod
    def sliding(cls, duration: Optional[float] = None, every: Optional[float] = None,
                count: Optional[int] = None) -> "Window":
        """Windows of ``duration`` seconds (or ``count`` tuples), one every ``every`` seconds (tuples)."""
        where = "Window.sliding"
        length = cls._length(where, duration, count)
        by_count = count is not None
        unit = "tuples" if by_count else "seconds"
        if every is None:
            raise ValueError(f"{where}: give every= (the slide, in {unit})")
        cls._positive(where, "every", every, by_count)
        if every > length:
            raise ValueError(f"{where}: every={every} is longer than the window ({length} {unit}): tuples "
                             "between windows would be in none; make every at most the window's length")
        return cls(length, every if by_count else float(every), by_count)

    @staticmethod
    def _length(where: str, duration: object, count: object) -> float:
        if (duration is None) == (count is None):
            raise ValueError(f"{where}: give exactly one of duration= (seconds) and count= (tuples)")
        if count is not None:
            Window._positive(where, "count", count, True)
            return count
        Window._positive(where, "duration", duration, False)
        return float(duration)

    @staticmethod
    def _positive(where: str, name: str, value: object, integer: bool) -> None:
        if integer:
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{where}: {name} must be a positive whole number of tuples, got {value!r}")
        elif isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0 or math.isinf(value):
            raise ValueError(f"{where}: {name} must be a positive number of seconds, got {value!r}")

    @property
    def duration(self) -> Optional[float]:
        """Seconds (None: a count window)."""
        return None if self.by_count else self.length

    @property
    def count(self) -> Optional[int]:
        """Tuples (None: a duration window)."""
        return int(self.length) if self.by_count else None

    @cached_property
    def pane(self) -> float:
        """The panes' length: the greatest common divisor of the window's and the slide's (tuples, or
        seconds to the nanosecond)."""
        if self.by_count:
            return math.gcd(int(self.length), int(self.every))
        return math.gcd(round(self.length * _NS), round(self.every * _NS)) / _NS

    @cached_property
    def size(self) -> int:
        """Panes in one window (1 for a tumbling window)."""
        return round(self.length / self.pane)

    @cached_property
    def step(self) -> int:
        """Panes from one window's end to the next's (the slide)."""
        return round(self.every / self.pane)

    def ending_from(self, p: int) -> int:
        """The first window (by its last pane) that ends with pane ``p`` or after it."""
        return -(-(p + 1) // self.step) * self.step - 1

    def boundary(self, p: int) -> float:
        """Where pane ``p`` starts, rounded to the nanosecond: 3 * 0.1 is 0.30000000000000004, and 0.3
        belongs to pane 3 of 0.1 s panes."""
        return p * self.pane if self.by_count else round(p * self.pane, 9)

    def pane_of(self, position: float) -> int:
        """The pane holding a timestamp (or a tuple's arrival index), exact at pane boundaries."""
        p = math.floor(position / self.pane)
        if self.boundary(p + 1) <= position:
            return p + 1
        if self.boundary(p) > position:
            return p - 1
        return p

    def start(self, w: int) -> float:
        """Where window ``w`` starts (included)."""
        return self.boundary(w - self.size + 1)

    def end(self, w: int) -> float:
        """Where window ``w`` ends (excluded): it fires once the watermark (or count) reaches this."""
        return self.boundary(w + 1)

    def describe(self) -> str:
        unit = "tuples" if self.by_count else "s"
        if self.every == self.length:
            return f"tumbling {self.length:g} {unit}"
        return f"sliding {self.length:g} {unit} every {self.every:g} {unit}"


class WindowView:
    """One firing window, as ``process_window`` sees it.

    ``start``/``end``: its bounds, half-open (timestamps, or arrival indexes for
    count windows). ``tuples``: every tuple in it, pane by pane in arrival order;
    ``new``: those not in the window fired before it; ``expired``: those of the
    window fired before it that are not in this one (Storm's ``get``,
    ``getNew``, ``getExpired``). ``value``: the accumulator of the incremental
    form (``reduce``/``merge``), which keeps no tuples, so it has only ``value``.
    """

    __slots__ = ("start", "end", "_panes", "_new_from", "_expired", "_value", "_incremental")

    def __init__(self, start: float, end: float, panes: list, new_from: int, expired: list,
                 value: object = None, incremental: bool = False) -> None:
        self.start = start
        self.end = end
        self._panes = panes  # [(pane id, its tuples), ...] in pane order
        self._new_from = new_from  # panes above this one were in no earlier fired window
        self._expired = expired
        self._value = value
        self._incremental = incremental

    def _tuples_of(self, what: str, panes: list) -> list:
        if self._incremental:
            raise AttributeError(f"window.{what}: this bolt reduces its windows incrementally "
                                 "(reduce/merge), which keeps no tuples; use window.value")
        return [t for _, items in panes for t in items]

    @property
    def tuples(self) -> list:
        return self._tuples_of("tuples", self._panes)

    @property
    def new(self) -> list:
        return self._tuples_of("new", [(p, items) for p, items in self._panes if p > self._new_from])

    @property
    def expired(self) -> list:
        return self._tuples_of("expired", self._expired)

    @property
    def value(self) -> Any:
        if not self._incremental:
            raise AttributeError("window.value: only a bolt with reduce(acc, tup) has one; use window.tuples")
        return self._value

    def __repr__(self) -> str:
        return f"WindowView([{self.start:g}, {self.end:g}))"
