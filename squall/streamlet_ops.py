"""The spouts and bolts a streamlet compiles to (``squall/streamlet.py`` makes one subclass per operator).

An element travels in one field, ``value``; a keyed element in two, ``key``
and ``value``, and user functions get it as the pair ``(key, value)``. The
subclass of each operator carries its user function (``fn``) and what its
input looks like (``keyed_in``, ``whole``).
"""
from __future__ import annotations

import itertools
import logging
from typing import Any, Callable, Mapping, Sequence

from squall.component import Bolt, ReliableSpout, TopologyContext, Tuple
from squall.windowed_bolt import WindowedBolt

log = logging.getLogger(__name__)
_MISSING = object()


class StreamletSpout(ReliableSpout):
    """``Builder.source(items)``: the elements of ``items`` (an iterable, or a function that returns one); with
    parallelism n, task i takes elements i, i + n, ... At least once each gets an id and is replayed until
    acked (``ReliableSpout``)."""

    outputs = ["value"]
    items: object = ()
    max_retries = 1000
    burst = 100  # elements per next_tuple call

    def initialize(self, config: Mapping[str, object], context: TopologyContext) -> None:
        tasks = context.get_component_tasks(context.get_component_id())
        items = type(self).items
        source = items() if callable(items) else items
        self._elements = itertools.islice(iter(source), tasks.index(context.get_task_id()), None, len(tasks))
        self._reliable = config["topology.reliability.mode"] == "ATLEAST_ONCE"
        self._next_id = 0

    def next_tuple(self) -> None:
        for value in itertools.islice(self._elements, self.burst):
            self.emit([value], tup_id=self._next_id if self._reliable else None)
            self._next_id += 1


class _Operator:
    """What every operator bolt knows of its input."""

    keyed_in = False  # the input is keyed: the element is (key, value)
    whole = False  # an unkeyed input from a user's spout with several fields: the element is their list
    fn: Callable  # the operator's user function (a staticmethod of its subclass)

    def element(self, tup: Tuple) -> Any:
        if self.keyed_in:
            return (tup[0], tup[1])
        return list(tup.values) if self.whole else tup[0]


class MapBolt(_Operator, Bolt):
    outputs = ["value"]

    def process(self, tup: Tuple) -> None:
        self.emit([self.fn(self.element(tup))])


class FlatMapBolt(_Operator, Bolt):
    outputs = ["value"]

    def process(self, tup: Tuple) -> None:
        self.emit_many([[v] for v in self.fn(self.element(tup))])


class FilterBolt(_Operator, Bolt):
    """Keeps the elements ``fn`` is true of (keyed stays keyed)."""

    def process(self, tup: Tuple) -> None:
        if self.fn(self.element(tup)):
            self.emit(list(tup.values))


class KeyByBolt(_Operator, Bolt):
    outputs = ["key", "value"]
    value_fn: Callable = staticmethod(lambda element: element)

    def process(self, tup: Tuple) -> None:
        element = self.element(tup)
        self.emit([self.fn(element), self.value_fn(element)])


class PassBolt(_Operator, Bolt):
    """``union``, ``clone``, ``repartition``: every element on, as it came."""

    def process(self, tup: Tuple) -> None:
        self.emit(list(tup.values))


class ReduceByKeyBolt(_Operator, Bolt):
    """The running reduction of each key's values, ``fn(acc, value)`` from its first value: each element
    updates its key and emits ``(key, acc)``. Each key is on one task (fields grouping on the key)."""

    outputs = ["key", "value"]

    def initialize(self, config: Mapping[str, object], context: TopologyContext) -> None:
        self._acc: dict = {}

    def process(self, tup: Tuple) -> None:
        key, value = tup[0], tup[1]
        acc = self._acc.get(key, _MISSING)
        acc = value if acc is _MISSING else self.fn(acc, value)
        self._acc[key] = acc
        self.emit([key, acc])


def keyed_combine(fn: Callable[[Any, Any], Any]) -> staticmethod:
    """A keyed reduction's ``Bolt.combine``: two ``[key, value]`` tuples of one key as ``[key, fn(a, b)]``."""
    def combine(a: Sequence[object], b: Sequence[object]) -> list:
        return [a[0], fn(a[1], b[1])]

    return staticmethod(combine)


class LogBolt(_Operator, Bolt):
    def process(self, tup: Tuple) -> None:
        log.info("%s: %r", self.__class__.__name__, self.element(tup))


class SinkBolt(_Operator, Bolt):
    """``sink(fn)``: ``fn(element)`` for each; ``fn.setup(config, context)`` first, if it has one."""

    def initialize(self, config: Mapping[str, object], context: TopologyContext) -> None:
        setup = getattr(self.fn, "setup", None)
        if setup is not None:
            setup(config, context)

    def process(self, tup: Tuple) -> None:
        self.fn(self.element(tup))


class _WindowedOperator(_Operator, WindowedBolt):
    """Keyed windows; with ``timestamp(value)`` given, event time (the subclass gets ``timestamp``)."""

    outputs = ["value"]
    keyed_in = True

    def emit_result(self, key: object, window: Any, value: object) -> None:
        self.emit([{"key": key, "window": [window.start, window.end], "value": value}])


class WindowReduceBolt(_WindowedOperator):
    """``reduce_by_key_and_window``: each key's values in a window reduced with ``fn``, incrementally (one
    ``{key: acc}`` per pane, merged per window), emitted when the window closes."""

    def initial(self) -> dict:
        return {}

    def reduce(self, acc: dict, tup: Tuple) -> dict:
        key, value = tup[0], tup[1]
        acc[key] = self.fn(acc[key], value) if key in acc else value
        return acc

    def merge(self, a: dict, b: dict) -> dict:
        out = dict(a)
        for key, value in b.items():
            out[key] = self.fn(out[key], value) if key in out else value
        return out

    def process_window(self, window: Any) -> None:
        for key, value in window.value.items():
            self.emit_result(key, window, value)


class JoinBolt(_WindowedOperator):
    """``join``: in each window, ``fn(left value, right value)`` for every pair of elements with the same key
    (an inner join), the left ones coming from component ``left``."""

    left = ""

    def process_window(self, window: Any) -> None:
        lefts: dict = {}
        rights: dict = {}
        for t in window.tuples:
            (lefts if t.component == self.left else rights).setdefault(t[0], []).append(t[1])
        for key, values in lefts.items():
            for a in values:
                for b in rights.get(key, ()):
                    self.emit_result(key, window, self.fn(a, b))
