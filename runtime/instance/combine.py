"""Map-side combining: a consumer's ``combine`` folds each batch's tuples of one key into one before it leaves.

A bolt that declares ``combine(a, b)`` (``Bolt.combine``) lets every task that
feeds it by a fields grouping send, per batch, one partial tuple per key
instead of one tuple per emit (Hadoop's combiner, Spark's map-side combine,
Flink's local aggregation). The sender does it where the batch leaves
(``InstanceState.send_batch``: full, flushed, or before a checkpoint marker),
so a batch's partials go to the one task that owns their key, in the order
their keys first came, each the fold of that key's tuples in emit order.

Two keys are the same when their values encode the same in msgpack, the rule
``stable_hash`` routes by: ``1``, ``1.0`` and ``True`` stay apart, a list key
works. A ``str`` key (the usual) is its own identity, without encoding.

Exact in every mode. At most once by associativity. At least once a run's
partials leave as one span anchored to every tuple the run folded
(``one_span``): its trees complete only once every partial is processed, and a
fail replays every tuple of the run. Effectively once a batch never spans a
checkpoint marker (the instance flushes before it sends markers) and a
rollback drops unsent batches whole, so each partial belongs to one epoch.
"""
from __future__ import annotations

import logging
from typing import Callable, Dict, List, Mapping, Optional, Sequence

import msgpack

from squall.idl import schema
from squall.runtime.instance.batch import Batch, as_row_run

log = logging.getLogger(__name__)

Values = Sequence[object]
CombineFn = Callable[[Values, Values], Values]
_packb = msgpack.Packer(use_bin_type=True).pack


class CombineError(RuntimeError):
    """A ``combine`` that broke its contract (a partial of another key or width)."""


class Combiner:
    """One consumer's ``combine`` over one stream, keyed by its fields grouping's fields (``key_index``)."""

    __slots__ = ("consumer", "stream", "fn", "key_index")

    def __init__(self, consumer: str, stream: str, fn: CombineFn, key_index: Sequence[int]) -> None:
        self.consumer = consumer
        self.stream = stream
        self.fn = fn
        self.key_index = tuple(key_index)

    def identity(self, values: Values) -> object:
        """What makes two tuples' keys the same: the key itself when it is one ``str``, else its msgpack."""
        if len(self.key_index) == 1:
            key = values[self.key_index[0]]
            return key if key.__class__ is str else _packb(key)
        return _packb([values[k] for k in self.key_index])

    def __call__(self, vals: List[Values]) -> List[Values]:
        """One partial per key of ``vals``, in the order the keys first came."""
        fn = self.fn
        partials: Dict[object, Values] = {}
        get = partials.get
        if len(self.key_index) == 1:  # identity() inlined: this loop is every combined tuple's cost
            k = self.key_index[0]
            for values in vals:
                key = values[k]
                if key.__class__ is not str:
                    key = _packb(key)
                acc = get(key)
                partials[key] = values if acc is None else fn(acc, values)
        else:
            identity = self.identity
            for values in vals:
                key = identity(values)
                acc = get(key)
                partials[key] = values if acc is None else fn(acc, values)
        if len(partials) == len(vals):
            return vals
        width = len(vals[0])
        for key, partial in partials.items():
            if len(partial) != width or self.identity(partial) != key:
                raise CombineError(f"{self.consumer}.combine returned {list(partial)!r} for tuples of stream "
                                   f"{self.stream!r}: a partial must keep their {width} fields and their key")
        return list(partials.values())


def one_span(spans: list) -> list:
    """At least once, a run's spans (``[start, roots, value, ...]``, ``runtime/acking.py``) as one span over all
    its partials: in every tree of the run, each root's value the XOR of what the run's spans had for it.

    Acking that span closes exactly what acking each of them would have, and only once every partial of the
    run is processed: each partial is anchored to every tuple the run folded (its own and the other keys'),
    so a fail replays them all. One span a run also keeps a ``process_batch`` receiver's one call a run.
    """
    values: Dict[int, int] = {}
    for k in range(0, len(spans), 3):
        roots, value = spans[k + 1], spans[k + 2]
        if roots is None:  # not tracked
            continue
        if roots.__class__ is int:
            values[roots] = values.get(roots, 0) ^ value
            continue
        for i, root in enumerate(roots):
            values[root] = values.get(root, 0) ^ (value if value.__class__ is int else value[i])
    if not values:
        return [0, None, 0]
    if len(values) == 1:
        root, value = next(iter(values.items()))
        return [0, root, value]
    return [0, list(values), list(values.values())]


class Combining:
    """A sending task's combiners by destination task, and how many tuples went in and out of them."""

    def __init__(self, by_dest: Mapping[int, Mapping[str, Combiner]]) -> None:
        self.by_dest = by_dest
        self.tuples_in = 0
        self.tuples_out = 0

    def combine(self, batch: Batch) -> None:
        """``batch``'s runs, each with one partial per key where its destination combines its stream (at
        least once, their spans made one: ``one_span``)."""
        streams = self.by_dest.get(batch.dest)
        if streams is None:
            return
        for run in batch.runs:
            combiner = streams.get(run[0])
            if combiner is None:
                continue
            if len(run) == 4:  # columnar: combined as rows
                as_row_run(run)
            vals = run[1]
            partials = combiner(vals)
            self.tuples_in += len(vals)
            self.tuples_out += len(partials)
            if partials is not vals:
                run[1] = partials
                if len(run) > 2:
                    run[2][:] = one_span(run[2])  # in place: a received Span's ack may ride on it until sent

    def metrics(self) -> dict:
        """The bucket's ``combined_in`` and ``combined_out`` (tuples before and after combining), reset."""
        figures = {"combined_in": self.tuples_in, "combined_out": self.tuples_out}
        self.tuples_in = self.tuples_out = 0
        return figures


def plan_combining(topology: schema.Topology, component: str, task_component: Mapping[int, str],
                   load_class: Callable[[str], type]) -> Optional[Combining]:
    """The combiners of ``component``'s tasks under a plan (``task_component``: every task's component), or
    None when nothing it feeds combines. ``load_class`` imports a consumer's class by its name."""
    me = next(c for c in topology.components if c.name == component)
    fields = {s.name: list(s.fields) for s in me.outputs}
    by_consumer: Dict[str, Dict[str, Combiner]] = {}
    for consumer in topology.components:
        for inp in consumer.inputs:
            if inp.component != component or inp.grouping != schema.GroupingKind.FIELDS:
                continue
            fn: Optional[CombineFn] = load_class(consumer.class_name).combine  # Bolt.combine
            if fn is None:
                continue
            key_index = [fields[inp.stream].index(f) for f in inp.fields]
            by_consumer.setdefault(consumer.name, {})[inp.stream] = Combiner(consumer.name, inp.stream, fn, key_index)
            log.info("combining %s/%s into %s by %s", component, inp.stream, consumer.name, list(inp.fields))
    if not by_consumer:
        return None
    return Combining({task: by_consumer[name] for task, name in task_component.items() if name in by_consumer})
