"""The rules of windowing as a pure state machine: tuples and ticks in, fired windows out. No I/O.

``Windower`` takes a tuple (``on_tuple``) or a tick (``on_tick``) with the
times as arguments, and answers whether the tuple was late and which windows
fired, each with the tuples to anchor its output to and the tuples whose last
window it was (to ack once it is processed: Storm's rule). ``WindowedBolt``
is its thin shell. See ``squall/window.py`` for panes and window numbering.

When a window fires:

- count windows: once the task has received the window's last tuple;
- processing time: a tuple's timestamp is its arrival (wall clock), the
  watermark is the wall clock at each tuple and tick, nothing is late;
- event time: the watermark is the minimum, over the upstream tasks that are
  not idle (or over their sub-sources, a Kafka spout task's partitions, when
  the bolt names ``watermark_fields``), of the largest timestamp each has sent, minus ``lag``; it never
  goes back. It moves with every tuple received, not on a timer. A task that
  has sent nothing for ``idle_timeout`` seconds (since the task started, if
  it never sent) stops holding it back until its next tuple. A timestamp
  counts toward its task's largest at most as the tuple's arrival time, so a
  future-stamped tuple never moves the watermark past ``now - lag``. A tuple
  whose timestamp is below the watermark when it arrives is late and is in
  no window.

A window fires once the watermark reaches its end, in window order, and only
if it holds a tuple (an empty stretch of time fires nothing).
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Optional

from squall.window import Window, WindowView

NEVER = float("-inf")


class _Pane:
    """One pane of a window: its tuples (if kept) and, incrementally, their accumulator."""

    __slots__ = ("items", "acc")

    def __init__(self, acc: Any) -> None:
        self.items: list = []
        self.acc = acc


@dataclass(frozen=True)
class Fired:
    """A window to hand to ``process_window``: then its output is anchored to ``anchors`` and the
    tuples of ``released`` (in no later window) are acked."""

    view: WindowView
    anchors: list
    released: list


@dataclass(frozen=True)
class Incremental:
    """The incremental form: ``reduce(acc, tup)`` folds a tuple into its pane's accumulator (which starts
    as ``initial()``), ``merge(a, b)`` joins the accumulators of a window's panes, oldest first, into a new
    one (a pane's is merged into several windows)."""

    reduce: Callable[[Any, Any], Any]
    merge: Optional[Callable[[Any, Any], Any]]
    initial: Callable[[], Any]


class Watermark:
    """Event time: the watermark from each upstream task's largest timestamp (see the module doc)."""

    def __init__(self, lag: float, idle_timeout: Optional[float]) -> None:
        self.lag = lag
        self.idle_timeout = idle_timeout
        self.tasks: dict = {}  # upstream task -> [largest timestamp counted, or None; last heard (monotonic)]
        self.value = NEVER

    def expect(self, tasks: Iterable[int], now: float) -> None:
        """The upstream tasks of the plan: a new one holds the watermark back until it sends (or idles).
        Sources of a task that left the plan go, its sub-sources (``(task, ...)``) with it."""
        tasks = set(tasks)
        heard = {key[0] if key.__class__ is tuple else key for key in self.tasks}
        for task in tasks - heard:
            self.tasks[task] = [None, now]
        for key in [k for k in self.tasks if (k[0] if k.__class__ is tuple else k) not in tasks]:
            del self.tasks[key]

    def observe(self, task: Any, ts: float, wall: float, now: float) -> None:
        """A tuple stamped ``ts`` from ``task`` arrived at ``wall`` (clock time; ``now``: monotonic).

        ``task`` is an upstream task id or a sub-source of one, ``(task id, value, ...)`` (a Kafka spout
        task's partition: ``WindowedBolt.watermark_fields``): each sub-source then counts on its own, and
        the task's own entry, waiting for its first tuple, is replaced by them."""
        entry = self.tasks.get(task)
        if entry is None:
            if task.__class__ is tuple:
                self.tasks.pop(task[0], None)
            entry = self.tasks[task] = [None, now]
        counted = ts if ts < wall else wall
        if entry[0] is None or counted > entry[0]:
            entry[0] = counted
        entry[1] = now
        low = None
        for largest, heard in self.tasks.values():
            if self.idle_timeout is not None and now - heard > self.idle_timeout:
                continue
            if largest is None:
                return  # a task that has not sent yet, and is not idle yet
            if low is None or largest < low:
                low = largest
        if low is not None and low - self.lag > self.value:
            self.value = low - self.lag


class Windower:
    """Panes of tuples, the watermark (or count), and which windows fire.

    ``keep_tuples``: hold each tuple until its last window fired (to hand it to
    ``process_window``, to anchor output to, to ack); the incremental form at
    most once holds only accumulators.
    """

    def __init__(self, window: Window, timestamped: bool = False, lag: float = 0.0,
                 idle_timeout: Optional[float] = None, incremental: Optional[Incremental] = None,
                 keep_tuples: bool = True) -> None:
        self.window = window
        self.size = window.size
        self.step = window.step
        self.timestamped = timestamped
        self.watermark = Watermark(lag, idle_timeout) if timestamped else None
        self.incremental = incremental
        self.keep_tuples = keep_tuples or incremental is None
        self.panes: dict = {}  # pane id -> _Pane
        self.pane_ids: list = []  # sorted
        self.count = 0  # tuples taken (count windows: the next one's arrival index)
        self.mark = NEVER  # how far windows may close: the watermark, the wall clock or the count
        self.last_fired: Optional[int] = None
        self.retired: list = []  # [(pane id, tuples)] of the last fired window in no later one: the next's expired

    def expect(self, tasks: Iterable[int], now: float) -> None:
        """The upstream tasks (event time); ``now`` is monotonic."""
        if self.watermark is not None:
            self.watermark.expect(tasks, now)

    def on_tuple(self, item: Any, ts: Optional[float], task: Any, wall: float, now: float) -> tuple:
        """A tuple (``ts``: its event time, None without one) from upstream ``task`` (or a sub-source of it,
        ``(task, value, ...)``: ``Watermark.observe``); ``wall`` is the clock
        time, ``now`` monotonic. Returns (late, [Fired, ...])."""
        if self.window.by_count:
            self._add(item, self.count)
            self.count += 1
            self.mark = self.count
        elif self.watermark is not None:
            if ts < self.watermark.value:
                self.watermark.observe(task, ts, wall, now)
                return True, []
            self._add(item, ts)
            self.watermark.observe(task, ts, wall, now)
            self.mark = self.watermark.value
        else:
            self._add(item, max(wall, self.mark))
            self.mark = max(wall, self.mark)
        return False, self._due()

    def on_tick(self, wall: float) -> list:
        """A tick: processing-time windows whose end the clock has passed fire (nothing else moves)."""
        if self.window.by_count or self.watermark is not None:
            return []
        self.mark = max(wall, self.mark)
        return self._due()

    def _add(self, item: Any, position: float) -> None:
        p = self.window.pane_of(position)
        pane = self.panes.get(p)
        if pane is None:
            pane = self.panes[p] = _Pane(self.incremental.initial() if self.incremental else None)
            bisect.insort(self.pane_ids, p)
        if self.keep_tuples:
            pane.items.append(item)
        if self.incremental is not None:
            pane.acc = self.incremental.reduce(pane.acc, item)

    def held(self) -> int:
        """Tuples held (kept tuples only)."""
        return sum(len(self.panes[p].items) for p in self.pane_ids)

    def _due(self) -> list:
        """Fire every window that holds a tuple and whose end ``mark`` has reached, oldest first."""
        fired = []
        while self.pane_ids:
            first = self.pane_ids[0] if self.last_fired is None else max(self.last_fired + 1, self.pane_ids[0])
            w = self.window.ending_from(first)
            if self.window.end(w) > self.mark:
                break
            fired.append(self._fire(w))
        return fired

    def _fire(self, w: int) -> Fired:
        size = self.size
        in_window = [p for p in self.pane_ids[:size] if w - size < p <= w]
        panes = [(p, self.panes[p].items) for p in in_window]
        expired = self.retired
        new_from = w - size if self.last_fired is None else max(self.last_fired, w - size)
        value = None
        if self.incremental is not None:
            value = self.panes[in_window[0]].acc
            for p in in_window[1:]:
                value = self.incremental.merge(value, self.panes[p].acc)
        view = WindowView(window_start(self.window, w), self.window.end(w), panes, new_from, expired,
                          value, self.incremental is not None)
        done = 0  # panes whose last window this is (the next one starts after them): p <= w + step - size
        while done < len(self.pane_ids) and self.pane_ids[done] <= w + self.step - size:
            done += 1
        retired = [(p, self.panes.pop(p).items) for p in self.pane_ids[:done]]
        del self.pane_ids[:done]
        self.retired = retired
        self.last_fired = w
        return Fired(view, [t for _, items in panes for t in items],
                     [t for _, items in retired for t in items])


def window_start(window: Window, w: int) -> float:
    """Window ``w``'s start (a count window's never below the first tuple's index, 0)."""
    start = window.start(w)
    return max(start, 0) if window.by_count else start
