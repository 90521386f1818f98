"""The tuples a bolt receives: ``Tuple`` filled in slot by slot, one class per delivery mode.

``object.__init__`` takes no arguments, so ``cls()`` plus two or three slot
stores is the cheapest way to make a tuple (a third less than
``object.__new__(Tuple)``): it is a per-tuple cost of every bolt.
"""
from __future__ import annotations

from typing import Callable, Optional, Union

from squall.component import Bolt, Tuple, TupleBatch, TupleSource, rows_of
from squall.runtime.acking import Roots
from squall.runtime.instance.compiled import compiled

RunDelivery = Callable[[Bolt, bool, list, TupleSource], None]  # process_run's signature


class ReceivedTuple(Tuple):
    """At most once: tuples have no id and no tree, the class answers None for both."""

    __slots__ = ()
    __init__ = object.__init__  # type: ignore[assignment]
    id = None
    roots = None


class AutoAckedTuple(Tuple):
    """At least once, under ``auto_ack``: its ``roots`` (its tree's root, a list of roots, or None:
    not tracked). Only the tuple being processed can still be acked, failed or anchored to
    (``current``), so its span is the instance's (``open_span``). Tuples have no id of their own on
    the wire."""

    __slots__ = ()
    __init__ = object.__init__  # type: ignore[assignment]
    id = None


class TrackedTuple(Tuple):
    """At least once, for a bolt that acks itself (``auto_ack`` off): ``span``, the ``Span`` it came
    in (None when it is not tracked, or once the bolt acked or failed it: a second ack or fail is
    ignored). ``roots`` names its trees."""

    __slots__ = ("span",)
    __init__ = object.__init__  # type: ignore[assignment]
    id = None

    @property  # type: ignore[override]
    def roots(self) -> Optional[Roots]:
        return None if self.span is None else self.span.roots


Received = Union[Tuple, TupleBatch]  # what a bolt is processing: a tuple, or a batch (process_batch)

IDLE = TrackedTuple()  # ``current`` outside process(), or once the bolt acked or failed it
IDLE.span = None


def process_run(component: Bolt, batched: bool, values_list: list, source: TupleSource) -> None:
    """At most once, a run of one stream's values from one task to a bolt: through ``process_batch``
    whole, or ``process`` a tuple at a time (the receive loop of every unanchored bolt, and a
    chain's ``emit_many``)."""
    if batched:
        component.process_batch(TupleBatch(values_list, source))
        return
    process = component.process
    make = ReceivedTuple
    for values in values_list:
        tup = make()
        tup.values = values
        tup.source = source
        process(tup)


def run_delivery() -> RunDelivery:
    """``process_run``, with its loop in C where the extension was built (``process_rows``: the same
    tuples, without a Python line a tuple); decided when an instance is made (``compiled``)."""
    loop = compiled("process_rows")
    if loop is None:
        return process_run

    def run(component: Bolt, batched: bool, values_list: list, source: TupleSource) -> None:
        if batched:
            process_run(component, batched, values_list, source)
        else:
            loop(ReceivedTuple, component.process, values_list, source)

    return run


def process_columns(component: Bolt, batched: bool, columns: list, source: TupleSource) -> None:
    """At most once, a run of one stream's tuples as columns (one list a field) to a bolt: to
    ``process_batch`` as they are (``batch.columns``), or as rows to ``process``."""
    if batched:
        component.process_batch(TupleBatch.of_columns(columns, source))
    else:
        process_run(component, False, rows_of(columns), source)
