"""Tuple sampling: a share of a component's emits written to its container's events log.

Off, sampling costs nothing on the emit path: the component's class has the methods ``emit.py`` made
for it, untouched. Turned on (``squall sample``, ``topology.debug``), ``Sampler`` puts wrappers of its
``emit``, ``emit_many`` and ``emit_columns`` on the class (the runtime subclass made for this task
alone), and takes them off again when it turns off: one class attribute swap each way, from the state
manager's thread (the loop picks the new method at its next emit).

Which emits are written is random per emit, not every n-th (a pattern in the keys would bias it): the
number of emits skipped until the next sampled one is drawn from the geometric distribution of the
percentage, which is the same as a coin tossed on every emit, for one random number per sampled emit.
``emit_many`` samples its list the same way, and ``emit_columns`` its tuples (each written as its
values, a field from each column); an ``emit`` called inside either (the base class's ``emit_many``
loops over ``emit``, its ``emit_columns`` calls ``emit_many``) is not sampled a second time.

An event is one JSON line: ``{"time", "component", "task", "stream", "id", "values"}`` (``id``: a
spout's message id, else null; what JSON cannot hold is written as its ``repr``). Lines are buffered
and written by the instance's loop at each flush (``EventsLog.flush``), so a sampled tuple costs no
system call of its own; the file is appended to by every instance of the container and rotated by
its executor like the logs.
"""
from __future__ import annotations

import json
import logging
import math
import os
import random
import time
from typing import TYPE_CHECKING, Callable, Iterable, Optional, Sequence

from squall.stream import DEFAULT_STREAM

if TYPE_CHECKING:
    from squall.runtime.instance.state import InstanceState

log = logging.getLogger(__name__)

FLUSH_LINES = 10_000  # lines buffered before they are written whatever the loop's flush timer says
# made once: json.dumps with options makes an encoder at every call (the most of a sampled emit's cost)
_encode = json.JSONEncoder(default=repr, allow_nan=False).encode


def skips(percent: float, uniform: Callable[[], float] = random.random) -> Callable[[], int]:
    """A function giving the number of emits from one sampled emit to the next (1: the next one), each
    emit sampled with probability ``percent`` / 100 independently (a geometric distribution)."""
    p = percent / 100
    if p >= 1:
        return lambda: 1
    scale = 1 / math.log1p(-p)
    return lambda: int(math.log(1.0 - uniform()) * scale) + 1


def event_line(component: str, task: int, stream: str, tup_id: object, values: Sequence[object],
               now: float) -> str:
    event = {"time": round(now, 6), "component": component, "task": task, "stream": stream, "id": tup_id,
             "values": list(values)}
    try:
        return _encode(event)
    except (TypeError, ValueError):  # keys JSON cannot hold, NaN: each value as JSON or its repr
        event["id"] = _json_or_repr(tup_id)
        event["values"] = [_json_or_repr(v) for v in values]
        return json.dumps(event, default=repr)


def _json_or_repr(value: object) -> object:
    try:
        json.dumps(value, allow_nan=False)
        return value
    except (TypeError, ValueError):
        return repr(value)


class EventsLog:
    """The sampled emits of this process, buffered and appended to the container's events log."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.lines: list[str] = []

    def add(self, line: str) -> None:
        self.lines.append(line)
        if len(self.lines) >= FLUSH_LINES:
            self.flush()

    def flush(self) -> None:
        """Append what is buffered, in one write (the instance's loop calls it at each flush)."""
        if not self.lines:
            return
        data = ("\n".join(self.lines) + "\n").encode()
        self.lines = []
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, data)
            finally:
                os.close(fd)
        except OSError as e:
            log.warning("sampled emits not written to %s: %s", self.path, e)


class Sampler:
    """Turns sampling of one task's emits on and off by swapping its component class's methods."""

    def __init__(self, inst: InstanceState, events: EventsLog, clock: Callable[[], float] = time.time) -> None:
        self.inst = inst
        self.events = events
        self.clock = clock
        self.cls = type(inst.component)
        # the class's own methods (None: inherited), put back when sampling turns off
        self.own = {name: self.cls.__dict__.get(name) for name in ("emit", "emit_many", "emit_columns")}
        self.percent = 0.0

    def set_percent(self, percent: float) -> None:
        if percent == self.percent:
            return
        was, self.percent = self.percent, percent
        if was > 0:
            for name, method in self.own.items():
                if method is None:
                    delattr(self.cls, name)
                else:
                    setattr(self.cls, name, method)
        if percent <= 0:
            log.info("task %d (%s): sampling off", self.inst.task_id, self.inst.component_name)
            return
        self.cls.emit, self.cls.emit_many, self.cls.emit_columns = self._sampled(skips(percent))
        log.info("task %d (%s): sampling %g%% of its emits into %s", self.inst.task_id, self.inst.component_name,
                 percent, self.events.path)

    def _sampled(self, next_skip: Callable[[], int]) -> tuple[Callable, Callable, Callable]:
        """Wrappers of the class's ``emit``, ``emit_many`` and ``emit_columns`` (as they are now) that
        write the sampled emits."""
        inner, inner_many, inner_columns = self.cls.emit, self.cls.emit_many, self.cls.emit_columns
        component, task = self.inst.component_name, self.inst.task_id
        add, clock = self.events.add, self.clock
        left = next_skip()  # emits until the next sampled one
        depth = 0  # inside emit_many or emit_columns: its emits are sampled there

        def write(stream: str, tup_id: object, values: Sequence[object]) -> None:
            add(event_line(component, task, stream, tup_id, values, clock()))

        def sample_rows(stream: str, tup_ids: Optional[Sequence[object]], n: int,
                        row: Callable[[int], Sequence[object]]) -> None:
            """The sampled ones of ``n`` tuples emitted in one call (``row(i)``: the values of the i-th)."""
            nonlocal left
            i = left - 1
            while i < n:
                write(stream, None if tup_ids is None else tup_ids[i], row(i))
                i += next_skip()
            left = i - n + 1

        def sample_many(stream: str, tup_ids: Optional[Sequence[object]], values_list: Sequence) -> None:
            sample_rows(stream, tup_ids, len(values_list), values_list.__getitem__)

        def sample_columns(stream: str, tup_ids: Optional[Sequence[object]],
                           columns: Sequence[Sequence[object]]) -> None:
            sample_rows(stream, tup_ids, len(columns[0]) if columns else 0, lambda i: [col[i] for col in columns])

        def around(call: Callable[[], None]) -> bool:
            """Run ``call`` (an inner emit of many tuples); True unless it runs inside another such
            emit (which samples its tuples itself)."""
            nonlocal depth
            depth += 1
            try:
                call()
            finally:
                depth -= 1
            return not depth

        if self.inst.is_spout:
            def emit(spout: object, values: Sequence[object], tup_id: object = None, stream: str = DEFAULT_STREAM,
                     direct_task: Optional[int] = None) -> tuple:
                nonlocal left
                targets = inner(spout, values, tup_id, stream, direct_task)
                if depth:
                    return targets
                left -= 1  # the countdown inlined: a call less on every emit that is not sampled
                if not left:
                    left = next_skip()
                    write(stream, tup_id, values)
                return targets

            def emit_many(spout: object, values_list: Iterable, tup_ids: Optional[Sequence[object]] = None,
                          stream: str = DEFAULT_STREAM) -> None:
                values_list = values_list if values_list.__class__ is list else list(values_list)
                if around(lambda: inner_many(spout, values_list, tup_ids, stream)):
                    sample_many(stream, tup_ids, values_list)

            def emit_columns(spout: object, columns: Sequence[Sequence[object]],
                             tup_ids: Optional[Sequence[object]] = None, stream: str = DEFAULT_STREAM) -> None:
                if around(lambda: inner_columns(spout, columns, tup_ids, stream)):
                    sample_columns(stream, tup_ids, columns)
        else:
            def emit(bolt: object, values: Sequence[object], stream: str = DEFAULT_STREAM,
                     anchors: Optional[Iterable] = None, direct_task: Optional[int] = None) -> tuple:
                nonlocal left
                targets = inner(bolt, values, stream, anchors, direct_task)
                if depth:
                    return targets
                left -= 1
                if not left:
                    left = next_skip()
                    write(stream, None, values)
                return targets

            def emit_many(bolt: object, values_list: Iterable, stream: str = DEFAULT_STREAM,
                          anchors: Optional[Iterable] = None) -> None:
                values_list = values_list if values_list.__class__ is list else list(values_list)
                if around(lambda: inner_many(bolt, values_list, stream, anchors)):
                    sample_many(stream, None, values_list)

            def emit_columns(bolt: object, columns: Sequence[Sequence[object]], stream: str = DEFAULT_STREAM,
                             anchors: Optional[Iterable] = None) -> None:
                if around(lambda: inner_columns(bolt, columns, stream, anchors)):
                    sample_columns(stream, None, columns)

        return emit, emit_many, emit_columns
