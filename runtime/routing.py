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
from typing import Any, Callable, Mapping, Optional, Sequence

import msgpack

from squall.idl import schema

G = schema.GroupingKind
_PARTIAL_SEED = 0x9E3779B9


class RoutingError(ValueError):
    """An emit that cannot be routed (wrong direct task, unknown stream)."""


def stable_hash(key_values: Sequence[Any]) -> int:
    """A hash of key values that is the same in every process and run."""
    return zlib.crc32(msgpack.packb(list(key_values), use_bin_type=True))


# Fields groupings remember the task of up to this many ``str`` keys (a dict
# lookup instead of msgpack + CRC-32 per tuple). Only exact ``str`` keys are
# cached: a dict would confuse ``1``, ``1.0`` and ``True``, which msgpack, and
# so ``stable_hash``, tells apart.
KEY_CACHE_SIZE = 1 << 16


def _round_robin(tasks: list) -> Callable[[Any], int]:
    start = random.randrange(len(tasks))
    next_task = itertools.cycle(tasks[start:] + tasks[:start]).__next__
    return lambda values: next_task()


def _fields(tasks: list, idx: list) -> Callable[[Any], int]:
    n = len(tasks)
    packb = msgpack.Packer(use_bin_type=True).pack
    crc = zlib.crc32
    if len(idx) != 1:
        return lambda values: tasks[crc(packb([values[k] for k in idx])) % n]
    k = idx[0]
    cache: dict = {}

    def choose(values: Any) -> int:
        key = values[k]
        if key.__class__ is str:
            task = cache.get(key)
            if task is None:
                task = tasks[crc(packb([key])) % n]
                if len(cache) >= KEY_CACHE_SIZE:
                    cache.clear()
                cache[key] = task
            return task
        return tasks[crc(packb([key])) % n]

    choose.key_index = k  # type: ignore[attr-defined]
    choose.key_cache = cache  # type: ignore[attr-defined]
    return choose


def _partial_key(tasks: list, idx: list) -> Callable[[Any], int]:
    n = len(tasks)
    load = {t: 0 for t in tasks}
    packb = msgpack.Packer(use_bin_type=True).pack

    def choose(values: Any) -> int:
        data = packb([values[k] for k in idx])
        a = tasks[zlib.crc32(data) % n]
        b = tasks[zlib.crc32(data, _PARTIAL_SEED) % n]
        t = a if load[a] <= load[b] else b
        load[t] += 1
        return t

    return choose


def _custom(obj: Any, tasks: list) -> Callable[[Any], list]:
    allowed = set(tasks)

    def choose(values: Any) -> list:
        chosen = list(obj.choose_tasks(list(values)))
        bad = [t for t in chosen if t not in allowed]
        if bad:
            raise RoutingError(f"custom grouping {type(obj).__name__} chose tasks {bad} "
                               f"outside its targets {sorted(allowed)}")
        return chosen

    return choose


class StreamRoute:
    """Where one output stream of a component goes: one chooser per subscriber.

    A chooser maps values to one task id (``single``) or to a list of them
    (all, custom). ``simple`` says whether the instance's fast emit path can
    take the stream: no subscriber, or one that picks one task.
    """

    __slots__ = ("name", "direct", "choosers", "direct_tasks", "fields")

    def __init__(self, name: str, direct: bool, fields: Sequence[str]):
        self.name = name
        self.direct = direct
        self.fields = list(fields)
        self.choosers: list = []  # (chooser, single)
        self.direct_tasks: set = set()

    @property
    def simple(self) -> bool:
        return not self.direct and (not self.choosers or (len(self.choosers) == 1 and self.choosers[0][1]))

    def fast(self) -> tuple:
        """What the fast emit path needs of a ``simple`` stream, as a plain tuple
        (unpacked per emit): (chooser or None when nothing subscribes, number of
        fields, key index, key cache).

        ``key_cache`` (single-key fields groupings) maps ``str`` keys at
        ``key_index`` to their task, so the emit path can look a key up before
        calling the chooser; only ``str`` keys are in it, and nothing else
        compares equal to one.
        """
        choose = self.choosers[0][0] if self.choosers else None
        return choose, len(self.fields), getattr(choose, "key_index", 0), getattr(choose, "key_cache", None)

    def targets(self, values: Any, direct_task: Optional[int]) -> list:
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


def build_routes(
    topology: Any,
    component: str,
    component_tasks: Mapping[str, Sequence[int]],
    task_container: Mapping[int, int],
    my_container: int,
    context: Any = None,
) -> dict:
    """``{stream name: StreamRoute}`` for every output stream of ``component``."""
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
            if kind in (G.SHUFFLE, G.NONE):
                chooser = _round_robin(tasks)
            elif kind == G.FIELDS:
                chooser = _fields(tasks, idx)
            elif kind == G.ALL:
                chooser = (lambda ts: lambda values: ts)(list(tasks))
            elif kind == G.GLOBAL:
                chooser = (lambda t: lambda values: t)(tasks[0])
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
