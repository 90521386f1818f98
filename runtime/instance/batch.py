"""What an instance has emitted and not yet sent: one ``Batch`` per destination task."""
from __future__ import annotations

from itertools import chain
from typing import List, Optional, Sequence, Set, Union

from squall.runtime.acking import Roots, Span, SpanValue, new_value, roots_of

INT = {int}
NO_ANCHOR = object()  # a batch's open span takes no more tuples (a spout's, one anchored to several inputs)


class Batch:
    """Tuples waiting for one destination task: runs of [stream, values] in emit order.

    At least once a run is ``[stream, values, spans]``; ``spans`` is a flat ``[start, roots,
    value, start, roots, value, ...]``: the tuples from index ``start`` on belong to the trees
    ``roots`` (one root, a list, or None: not tracked) with the span's ``value``
    (``runtime/acking.py``). ``anchor`` is the received ``Span`` the open span's tuples are
    anchored to: the next tuple anchored to it joins that span (a sentence's words), any other
    starts one.

    A columnar run (``emit_columns``) is ``[stream, columns, spans, n]``: ``n`` tuples as one list
    a field, ``spans`` as a row run's (empty at most once). While one is open ``stream`` is None, so
    the next row emit opens a run of its own.

    ``vals`` is the open (last) row run; the batch is full once it holds ``limit``
    values, which is the batch size less what earlier runs hold. A batch
    lives as long as its destination: sending it clears it.
    """

    __slots__ = ("dest", "targets", "size", "runs", "stream", "vals", "limit", "spans", "anchor")

    def __init__(self, dest: int, size: int) -> None:
        self.dest = dest
        self.targets = (dest,)  # what an emit to this destination alone returns
        self.size = size
        self.clear()

    def clear(self) -> None:
        self.runs: list = []
        self.stream: Optional[str] = None
        self.vals: list = []
        self.spans: list = []
        self.anchor: Union[Span, None, object] = NO_ANCHOR  # NO_ANCHOR: the open span takes no more
        self.limit = self.size

    def open_run(self, stream: str, tracked: bool) -> None:
        self.limit -= len(self.vals)
        self.stream = stream
        self.vals = []
        if tracked:
            self.spans = []
            self.anchor = NO_ANCHOR
            self.runs.append([stream, self.vals, self.spans])
        else:
            self.runs.append([stream, self.vals])

    def add(self, stream: str, values: Sequence[object]) -> None:
        if stream != self.stream:
            self.open_run(stream, False)
        self.vals.append(values)

    def add_span(self, stream: str, values: Sequence[object], roots: Optional[Roots], value: SpanValue) -> None:
        """At least once: ``values`` starts a span of its own in the trees ``roots`` (None and 0: not
        tracked); the next tuple starts another."""
        if stream != self.stream:
            self.open_run(stream, True)
        self.spans += (len(self.vals), roots, value)
        self.anchor = NO_ANCHOR
        self.vals.append(values)

    def join(self, stream: str, values: Sequence[object], anchor: Optional[Span]) -> None:
        """At least once: ``values`` anchored to the received span ``anchor`` (None: not tracked). It
        joins the open span if that is ``anchor``'s; else it starts one that takes a share of
        ``anchor``'s value, and ``anchor``'s ack may ride on it."""
        if stream != self.stream:
            self.open_run(stream, True)
        if anchor is not self.anchor:
            spans = self.spans
            if anchor is None:
                spans += (len(self.vals), None, 0)
            else:
                share = new_value()
                anchor.delta ^= share
                spans += (len(self.vals), anchor.roots, share)
                anchor.carried = spans
                anchor.at = len(spans) - 1
            self.anchor = anchor
        self.vals.append(values)

    def fill(self, stream: str, values_list: list) -> list:
        """As many of ``values_list`` as the batch has room for, in one run of ``stream`` (their span
        is the open one, at least once: ``join`` the first); returns the rest (the batch is then
        ``full``: send it and fill again)."""
        if stream != self.stream:
            self.open_run(stream, False)
        room = self.limit - len(self.vals)
        if room >= len(values_list):
            self.vals += values_list
            return []
        self.vals += values_list[:room]
        return values_list[room:]

    def add_columns(self, stream: str, columns: List[list], n: int, anchor: Optional[Span], tracked: bool,
                    owned: bool = False, tree: Optional[int] = None) -> int:
        """``n`` tuples of ``stream`` as ``columns`` (one list a field), appended to the open columnar
        run of ``stream`` or in a new one (``owned``: the lists are this batch's to keep). At least once
        they are anchored to ``anchor`` as ``join`` anchors: one span for all of them; or, with
        ``tree`` (a spout's new tree's root), they start a span of their own in that tree, whose
        value is returned (as ``add_span``)."""
        runs = self.runs
        run = runs[-1] if self.stream is None and runs else None
        if run is None or len(run) != 4 or run[0] != stream:
            self.limit -= len(self.vals)
            self.vals = []
            self.stream = None
            self.anchor = NO_ANCHOR
            self.spans = []
            run = [stream, columns if owned else [list(col) for col in columns], self.spans, 0]
            runs.append(run)
        else:
            for col, more in zip(run[1], columns):
                col += more
        value = 0
        if tree is not None:
            value = new_value()
            self.spans += (run[3], tree, value)
            self.anchor = NO_ANCHOR
        elif tracked and anchor is not self.anchor:
            spans = self.spans
            if anchor is None:
                spans += (run[3], None, 0)
            else:
                share = new_value()
                anchor.delta ^= share
                spans += (run[3], anchor.roots, share)
                anchor.carried = spans
                anchor.at = len(spans) - 1
            self.anchor = anchor
        run[3] += n
        self.limit -= n
        return value

    @property
    def full(self) -> bool:
        return len(self.vals) >= self.limit

    def count(self) -> int:
        return sum(run[3] if len(run) == 4 else len(run[1]) for run in self.runs)

    def roots(self) -> Set[int]:
        """The trees its tuples are in (at least once)."""
        return {root for run in self.runs for roots in run[2][1::3] if roots is not None
                for root in roots_of(roots)}


def as_row_run(run: list) -> None:
    """A columnar run ``[stream, columns, spans, n]`` made, in place, the row run of the same tuples
    (``[stream, values]``, at least once ``[stream, values, spans]``)."""
    run[1] = list(map(list, zip(*run[1])))
    del run[3]
    if not run[2]:
        del run[2]


def untouched_acks(spans: list, touched: list) -> list:
    """``[root, value, ...]``: the acks of a received run's spans that never got a ``Span`` (acked
    whole: each sends its value as it came), leaving out those that start at an index in
    ``touched``. At C speed when every span has one root, the common case."""
    if len(touched) * 3 == len(spans):
        return []
    roots, values = spans[1::3], spans[2::3]
    if not touched and set(map(type, roots)) <= INT and set(map(type, values)) <= INT:
        return list(chain.from_iterable(zip(roots, values)))
    pairs: list = []
    skip = set(touched)
    for k in range(0, len(spans), 3):
        if spans[k + 1] is None or k in skip:
            continue
        value = spans[k + 2]
        for i, root in enumerate(roots_of(spans[k + 1])):
            pairs += (root, value if value.__class__ is int else value[i])
    return pairs
