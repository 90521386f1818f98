"""Groupings, computed at the sending instance: values -> destination task ids.

Pure functions of the logical plan and the task layout, no I/O. Fields and
partial-key groupings hash with ``stable_hash`` (CRC-32 of the msgpack
encoding of the key values), never Python's salted ``hash()``, so a key lands
on the same task in every process and every run.
"""
from __future__ import annotations

import itertools
import random
import zlib
from typing import Callable, Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple, TypeVar

import msgpack

from squall.idl import schema
from squall.component import TopologyContext
from squall.stateful import stable_hash
from squall.stream import CustomGrouping

G = schema.GroupingKind
Values = Sequence[object]  # an emitted tuple's values
Chooser = Callable[[Values], int]  # a grouping that sends each tuple to one task
Columns = Sequence[Sequence[object]]  # tuples as one list a field (``emit_columns``)
# a fields grouping's slot of each tuple of columns, in bulk: the tuple goes to task ``owners[slot]``
SlotsChooser = Callable[[Columns], List[int]]
T = TypeVar("T")
_PARTIAL_SEED = 0x9E3779B9


class RoutingError(ValueError):
    """An emit that cannot be routed (wrong direct task, unknown stream)."""


_packb = msgpack.Packer(use_bin_type=True).pack


# Fields groupings remember the task of up to this many ``str`` keys (a dict
# lookup instead of msgpack + CRC-32 per tuple).
KEY_CACHE_SIZE = 1 << 16


def _value_free(next_task: Callable[[], int]) -> Chooser:
    """A chooser that ignores the values; ``next_task`` (C-level) is kept for the fast emit path."""
    choose = lambda values: next_task()  # noqa: E731
    choose.next_task = next_task  # type: ignore[attr-defined]
    return choose


def _round_robin(tasks: List[int]) -> Chooser:
    start = random.randrange(len(tasks))
    return _value_free(itertools.cycle(tasks[start:] + tasks[:start]).__next__)


def str_key_cache(compute: Callable[[object], T]) -> Tuple[Dict[object, T], Callable[[object], T]]:
    """``(known, miss)``: a plain dict of ``compute(key)`` by key, and the function that fills it.

    Look a key up in ``known`` (CPython's fastest subscript) and call ``miss``
    on a ``KeyError`` or, for an unhashable key, a ``TypeError``. Only exact
    ``str`` keys are remembered (up to ``KEY_CACHE_SIZE``): a dict would
    confuse ``1``, ``1.0`` and ``True``, which msgpack, and so ``stable_hash``,
    tells apart; nothing else compares equal to a ``str``, so looking up any
    hashable key is right.
    """
    known: Dict[object, T] = {}

    def miss(key: object) -> T:
        value = compute(key)
        if key.__class__ is str:
            if len(known) >= KEY_CACHE_SIZE:
                known.clear()
            known[key] = value
        return value

    return known, miss


def _fields(tasks: List[int], idx: List[int], key_groups: Optional[int] = None) -> Chooser:
    """Fields grouping; into a stateful component (``key_groups``), by the owner of the key's group
    (``squall/stateful.py``), so its keyed state can follow a rescale.

    The chooser's ``slots`` attribute routes columns in bulk (``emit_columns``): the slot of each
    tuple, ``stable_hash`` of its key modulo the slots, whose task is ``owners[slot]`` (the task the
    chooser picks for the same values)."""
    n = len(tasks)
    crc = zlib.crc32
    if key_groups:
        g = key_groups
        tasks = [tasks[group * n // g] for group in range(g)]  # the owner of each key group
        n = g
    if len(idx) != 1:  # stable_hash inlined: this runs for every tuple
        choose_keys = lambda values: tasks[crc(_packb([values[k] for k in idx])) % n]  # noqa: E731

        def slots_of_keys(columns: Columns) -> List[int]:
            # msgpack packs a tuple as it packs a list: the same bytes as the per-tuple route's
            return [crc(_packb(key)) % n for key in zip(*[columns[k] for k in idx])]

        choose_keys.slots = slots_of_keys  # type: ignore[attr-defined]
        choose_keys.owners = tasks  # type: ignore[attr-defined]
        return choose_keys
    k = idx[0]
    known, key_task = str_key_cache(lambda key: tasks[stable_hash([key]) % n])
    known_slots, key_slot = str_key_cache(lambda key: stable_hash([key]) % n)

    def choose(values: Values) -> int:
        try:
            return known[values[k]]
        except (KeyError, TypeError):
            return key_task(values[k])

    def slot_of(key: object) -> int:
        try:
            return known_slots[key]
        except (KeyError, TypeError):
            return key_slot(key)

    def slots(columns: Columns) -> List[int]:
        keys = columns[k]
        try:  # every key known: one dict lookup a key at C speed
            return list(map(known_slots.__getitem__, keys))
        except (KeyError, TypeError):
            return list(map(slot_of, keys))

    choose.key_index = k  # type: ignore[attr-defined]
    choose.key_task = key_task  # type: ignore[attr-defined]
    choose.slots = slots  # type: ignore[attr-defined]
    choose.owners = tasks  # type: ignore[attr-defined]
    return choose


def _partial_key(tasks: List[int], idx: List[int]) -> Chooser:
    n = len(tasks)
    load = {t: 0 for t in tasks}

    def choose(values: Values) -> int:
        data = _packb([values[k] for k in idx])
        a = tasks[zlib.crc32(data) % n]
        b = tasks[zlib.crc32(data, _PARTIAL_SEED) % n]
        t = a if load[a] <= load[b] else b
        load[t] += 1
        return t

    return choose


def _custom(obj: CustomGrouping, tasks: List[int]) -> Callable[[Values], List[int]]:
    allowed = set(tasks)

    def choose(values: Values) -> List[int]:
        chosen = list(obj.choose_tasks(list(values)))
        bad = [t for t in chosen if t not in allowed]
        if bad:
            raise RoutingError(f"custom grouping {type(obj).__name__} chose tasks {bad} "
                               f"outside its targets {sorted(allowed)}")
        return chosen

    return choose


class FastRoute(NamedTuple):
    """What the instance's fast emit path needs of a stream whose tuples go to one task each."""

    choose: Optional[Chooser]  # None: nothing subscribes
    fields: int  # values an emit must have
    next_task: Optional[Callable[[], int]]  # the chooser without the values and without a Python frame
    key_index: int  # a single-key fields grouping's key among the values
    key_task: Optional[Callable[[object], int]]  # the task of such a key, for the instance to remember
    slots: Optional[SlotsChooser]  # a fields grouping's slot of each tuple of columns, in bulk
    owners: Sequence[int]  # the task of each slot


class StreamRoute:
    """Where one output stream of a component goes: one chooser per subscriber.

    A chooser maps values to one task id (``single``) or to a list of them
    (all, custom).
    """

    __slots__ = ("name", "direct", "choosers", "direct_tasks", "fields")

    def __init__(self, name: str, direct: bool, fields: Sequence[str]):
        self.name = name
        self.direct = direct
        self.fields = list(fields)
        self.choosers: list = []  # (chooser, single)
        self.direct_tasks: set = set()

    def fast(self) -> Optional[FastRoute]:
        """What the instance's fast emit path needs of this stream, or None if it
        cannot take it (direct, all, custom, several subscribers).

        ``next_task`` (shuffle, local-or-shuffle, global) picks without the
        values and without a Python frame; ``key_task(values[key index])``
        (single-key fields groupings) is the task of a key, for the instance to
        remember (``str_key_cache``) next to its batch.
        """
        if self.direct or len(self.choosers) > 1 or (self.choosers and not self.choosers[0][1]):
            return None
        choose = self.choosers[0][0] if self.choosers else None
        return FastRoute(choose, len(self.fields), getattr(choose, "next_task", None),
                         getattr(choose, "key_index", 0), getattr(choose, "key_task", None),
                         getattr(choose, "slots", None), getattr(choose, "owners", ()))

    def targets(self, values: Values, direct_task: Optional[int]) -> List[int]:
        if self.direct:
            if direct_task is None:
                raise RoutingError(f"stream {self.name!r} is direct: emit it with direct_task=<task id>")
            if direct_task not in self.direct_tasks:
                raise RoutingError(f"direct_task {direct_task} does not consume stream {self.name!r} "
                                   f"(its consumers' tasks: {sorted(self.direct_tasks)})")
            return [direct_task]
        if direct_task is not None:
            raise RoutingError(f"direct_task given but stream {self.name!r} is not declared direct")
        out: list = []
        for choose, single in self.choosers:
            if single:
                out.append(choose(values))
            else:
                out.extend(choose(values))
        return out


def _key_groups(topology: schema.Topology, consumer: schema.Component) -> Optional[int]:
    """A stateful consumer's ``squall.state.key.groups`` (None for others)."""
    if not consumer.stateful:
        return None
    from squall.logical import component_config

    return int(component_config(topology, consumer.name)["squall.state.key.groups"])


def build_routes(
    topology: schema.Topology,
    component: str,
    component_tasks: Mapping[str, Sequence[int]],
    task_container: Mapping[int, int],
    my_container: int,
    context: Optional[TopologyContext] = None,
    chained: Optional[Mapping[str, int]] = None,
) -> dict:
    """``{stream name: StreamRoute}`` for every output stream of ``component``. ``chained``: consumer
    -> the one task of it that runs in this process (a chain, ``squall/chaining.py``): every tuple
    for that consumer goes to that task."""
    me = next(c for c in topology.components if c.name == component)
    routes = {s.name: StreamRoute(s.name, bool(s.direct), s.fields) for s in me.outputs}
    for consumer in sorted(topology.components, key=lambda c: c.name):
        for inp in consumer.inputs:
            if inp.component != component:
                continue
            route = routes.get(inp.stream)
            if route is None:
                raise RoutingError(f"{consumer.name} subscribes to undeclared stream {component}/{inp.stream}")
            tasks = sorted(component_tasks.get(consumer.name, ()))
            if not tasks:
                continue
            kind = inp.grouping
            if route.direct or kind == G.DIRECT:
                route.direct_tasks.update(tasks)
                continue
            idx = [route.fields.index(f) for f in inp.fields] if inp.fields else []
            single = kind != G.ALL and kind != G.CUSTOM
            if chained and consumer.name in chained:
                chooser = _value_free(itertools.repeat(chained[consumer.name]).__next__)
                single = True
            elif kind in (G.SHUFFLE, G.NONE):
                chooser = _round_robin(tasks)
            elif kind == G.FIELDS:
                chooser = _fields(tasks, idx, _key_groups(topology, consumer))
            elif kind == G.ALL:
                chooser = (lambda ts: lambda values: ts)(list(tasks))
            elif kind == G.GLOBAL:
                chooser = _value_free(itertools.repeat(tasks[0]).__next__)
            elif kind == G.LOCAL_OR_SHUFFLE:
                local = [t for t in tasks if task_container.get(t) == my_container]
                chooser = _round_robin(local or tasks)
            elif kind == G.PARTIAL_KEY:
                chooser = _partial_key(tasks, idx)
            elif kind == G.CUSTOM:
                from squall.stream import decode_custom

                obj = decode_custom(inp.custom.class_name, inp.custom.state_json)
                obj.prepare(context, consumer.name, inp.stream, list(tasks))
                chooser = _custom(obj, tasks)
            else:
                raise RoutingError(f"unknown grouping {kind} from {component}/{inp.stream} to {consumer.name}")
            route.choosers.append((chooser, single))
    return routes
