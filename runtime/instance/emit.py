"""The hot path of every emit, written once: the component's class with a generated fast ``emit``.

``emit`` on a stream with no subscriber or one that picks one task (all but
all, custom and direct) skips the generic route walk (``InstanceState.emit``):
one chooser call and an append to the destination's open run. At most once,
a bolt's ``ack``/``fail`` go to the instance's counters directly. A class that
overrides ``emit``, ``ack`` or ``fail`` keeps its own, which goes through the
collector.

The fast methods go on a subclass made here (same name and module), and the
component is made from it, not patched afterwards: an instance attribute that
shadows a class method, or a class swapped under an object, defeats CPython's
attribute specialisation, which costs more than the layers it saves. (A
component object handed in, as unit tests do, gets the subclass as its class:
right, if slower.)

Where a line inlines a method (``Batch.add_span``, ``Batch.join``,
``AckTracker.start``), a comment names it: a change to one is a change to both.

Outside a chain, ``self.emit(values)`` (and at least once a spout's ``self.emit(values,
tup_id)``) runs in C where the extension ``_emit.c`` was built (``compiled_emit``): the same
steps as ``fast_emit``, without a Python frame (a Python frame a word was most of what a
tuple cost between processes). ``SQUALL_PURE_PYTHON=1`` in the environment keeps the pure
Python emit, which stays the reference and is what runs wherever the extension is missing.
"""
from __future__ import annotations

import time
from itertools import compress
from operator import itemgetter
from typing import TYPE_CHECKING, Callable, Dict, Iterable, List, NamedTuple, Optional, Sequence

from squall.component import Tuple, column_count, rows_of
from squall.runtime.acking import (ROOT_BITS, SYSTEM_RANDOM_BITS, TASK_SHIFT, CallIds, Span, new_value, random_bits,
                                   some_untracked)
from squall.runtime.instance.batch import NO_ANCHOR, Batch
from squall.runtime.instance.compiled import compiled
from squall.runtime.instance.edge import Edge, EmitColumnsMethod, EmitManyMethod, EmitMethod
from squall.runtime.instance.tuples import IDLE, Received
from squall.runtime.routing import FastRoute, SlotsChooser
from squall.stream import DEFAULT_STREAM

if TYPE_CHECKING:
    from squall.runtime.instance.state import InstanceState



def compiled_emit(inst: InstanceState, emit: EmitMethod) -> EmitMethod:
    """``emit`` (a fast emit outside a chain, or a spout's wrapper of one) with ``self.emit(values)``
    in C, and at least once a spout's ``self.emit(values, tup_id)`` too; every other call passed on
    to ``emit``. ``emit`` itself where the extension is not built or ``SQUALL_PURE_PYTHON`` is set."""
    make = compiled("CompiledEmit")
    if make is None:
        return emit
    tracking: dict = {}
    if inst.reliable:
        tracking = {"inst": inst, "auto_anchor": not inst.is_spout and inst.auto_anchor}
        # None: span values from the extension's own generator; a test that sets random_bits draws from its
        bits = None if random_bits is SYSTEM_RANDOM_BITS else random_bits
        if tracking["auto_anchor"] and inst.auto_ack:  # inst.anchor() and Batch.join in C too
            tracking.update(span_type=Span, idle=IDLE, bits=bits)
        if inst.is_spout:
            tracking.update(task_id=inst.task_id, trees=inst.tracker.trees, bits=bits, clock=time.monotonic,
                            task_bits=inst.task_id << TASK_SHIFT, root_bits=ROOT_BITS, no_anchor=NO_ANCHOR)
    return make(inst.fast_routes, inst.batches, inst.emit_cell, inst.send_batch, inst.append, emit,
                DEFAULT_STREAM, Batch, **tracking)


class FastEmit(NamedTuple):
    """What the fast emit path needs of one stream, refreshed per plan (``InstanceState.on_physical_plan``)
    from its route (``StreamRoute.fast``)."""

    fields: int  # values an emit must have
    key_index: int  # a single-key fields grouping's key among them
    key_batches: Optional[Dict[object, Batch]]  # that grouping's batch of a known str key (``str_key_cache``)
    key_miss: Optional[Callable[[object], Batch]]  # the batch of a key not known yet (and remember it)
    next_task: Optional[Callable[[], int]]  # a grouping that picks without the values (shuffle, global)
    choose: Optional[Callable[[Sequence[object]], int]]  # the chooser; None: nothing subscribes


class ColumnRoute(NamedTuple):
    """What ``emit_columns`` needs of one stream whose tuples go to one task each (``StreamRoute.fast``)."""

    fields: int  # columns an emit must have
    subscribed: bool  # False: nothing subscribes to the stream
    next_task: Optional[Callable[[], int]]  # a grouping that picks without the values: one task for the call
    slots: Optional[SlotsChooser]  # a fields grouping: the slot of each tuple, in bulk
    owners: Sequence[int]  # the task of each slot
    selectors: Optional[Dict[int, bytes]]  # up to 256 slots, task -> ``bytes.translate`` table: 1 at its slots, else 0

    @classmethod
    def of(cls, fast: FastRoute) -> ColumnRoute:
        selectors = None
        if fast.slots is not None and len(fast.owners) <= 256:
            selectors = {task: bytes(int(slot < len(fast.owners) and fast.owners[slot] == task) for slot in range(256))
                         for task in dict.fromkeys(fast.owners)}
        return cls(fast.fields, fast.choose is not None, fast.next_task, fast.slots, fast.owners, selectors)


def runtime_class(inst: InstanceState, cls: type) -> type:
    """``cls`` with ``inst``'s fast paths, where it does not override them. With ``inst.fast_path``
    off, only a chain member's edge is added: every other emit, ack and fail goes through the
    collector's generic methods (``InstanceState.emit``)."""
    from squall.component import Bolt, Spout

    base = Spout if inst.is_spout else Bolt
    methods: dict = {}
    own_emit = getattr(cls, "emit", None) is not base.emit
    own_emit_many = getattr(cls, "emit_many", None) is not base.emit_many
    own_columns = own_emit or own_emit_many or getattr(cls, "emit_columns", None) is not base.emit_columns
    generic = own_emit or not inst.fast_path
    many = None  # the emit_many this instance gets, if not its class's own
    columns = None  # the emit_columns it gets, if not its class's (which emits rows through emit_many)
    if inst.chained:  # a chain member: its next member's stream is delivered by call
        inst.edge = Edge(inst)
        delivered, chain_many = inst.edge.wrap(generic_emit(inst) if generic else
                                               fast_emit(inst, tracked=inst.reliable))
        if not own_emit_many:
            many = chain_many
        if not own_columns:
            columns = inst.edge.wrap_columns(fast_emit_columns(inst, chain_many) if inst.fast_path else
                                             rows_emit_columns(chain_many))
    if not own_emit and (inst.chained or inst.fast_path):
        emit = delivered if inst.chained else fast_emit(inst, tracked=inst.reliable)
        if inst.is_spout:
            def spout_emit(spout: Spout, values: Sequence[object], tup_id: object = None,
                           stream: str = DEFAULT_STREAM, direct_task: Optional[int] = None) -> tuple:
                return emit(spout, values, stream, None, direct_task, tup_id)

            methods["emit"] = spout_emit
        else:
            methods["emit"] = emit
        if not inst.chained:
            methods["emit"] = compiled_emit(inst, methods["emit"])
    if not inst.chained and inst.fast_path and not own_emit and not own_emit_many:
        many = fast_emit_many(inst, emit)
        if not own_columns:
            columns = fast_emit_columns(inst, many)
    if many is not None:
        if inst.is_spout:
            def spout_emit_many(spout: Spout, values_list: list, tup_ids: Optional[Sequence[object]] = None,
                                stream: str = DEFAULT_STREAM) -> None:
                many(spout, values_list, stream, None, tup_ids)

            methods["emit_many"] = spout_emit_many
        else:
            methods["emit_many"] = many
    if columns is not None:
        if inst.is_spout:
            def spout_emit_columns(spout: Spout, cols: Sequence[Sequence[object]],
                                   tup_ids: Optional[Sequence[object]] = None, stream: str = DEFAULT_STREAM) -> None:
                columns(spout, cols, stream, None, tup_ids)

            methods["emit_columns"] = spout_emit_columns
        else:
            methods["emit_columns"] = columns
    if not inst.is_spout and not inst.reliable and inst.fast_path:  # at least once, the collector's
        def ack(bolt: Bolt, tup: Received) -> None:
            inst.ack_count += 1

        def fail(bolt: Bolt, tup: Received) -> None:
            inst.fail_count += 1

        if getattr(cls, "ack", None) is Bolt.ack:
            methods["ack"] = ack
        if getattr(cls, "fail", None) is Bolt.fail:
            methods["fail"] = fail
    # a subclass even without methods: sampling swaps this task's methods on it (``sampling.py``)
    return type(cls.__name__, (cls,), {"__slots__": (), "__module__": cls.__module__,
                                       "__qualname__": cls.__qualname__, **methods})


def generic_emit(inst: InstanceState) -> EmitMethod:
    """The collector's emit with an ``emit`` method's signature (for a class with its own ``emit``,
    which reaches the collector through it, or with the fast path off)."""
    def emit(component: object, values: Sequence[object], stream: str = DEFAULT_STREAM,
             anchors: Optional[Iterable[Tuple]] = None, direct_task: Optional[int] = None,
             tup_id: object = None) -> tuple:
        return inst.emit(values, stream, tup_id, anchors, direct_task)

    return emit


def fast_emit(inst: InstanceState, tracked: bool = False) -> EmitMethod:
    """A bolt-signature ``emit`` method with the fast path; ``inst.fast_routes`` is refreshed per plan.

    ``tracked`` (at least once): a spout's tuple emitted with an id starts a tree; a bolt's is
    anchored to the one being processed (when ``auto_anchor``); explicit anchors take the
    generic path.
    """
    fast = inst.fast_routes
    batches = inst.batches
    slow = inst.emit
    send = inst.send_batch
    append = inst.append
    emits = inst.emit_cell
    bits = random_bits
    spout = inst.is_spout
    auto_anchor = tracked and not spout and inst.auto_anchor
    trees = inst.tracker.trees if spout else None
    task_id = inst.task_id
    task_bits = task_id << TASK_SHIFT
    clock = time.monotonic

    def emit(component: object, values: Sequence[object], stream: str = DEFAULT_STREAM,
             anchors: Optional[Iterable[Tuple]] = None, direct_task: Optional[int] = None,
             tup_id: object = None) -> tuple:
        try:
            fields, key_index, key_batches, key_miss, next_task, choose = fast[stream]
        except KeyError:
            return slow(values, stream, tup_id, anchors, direct_task)
        if len(values) != fields or direct_task is not None or (tracked and anchors is not None):
            return slow(values, stream, tup_id, anchors, direct_task)
        emits[0] += 1
        if key_batches is not None:
            try:
                batch = key_batches[values[key_index]]
            except KeyError:
                batch = key_miss(values[key_index])
            except TypeError:  # an unhashable key
                batch = batches[choose(values)]
        elif next_task is not None:
            batch = batches[next_task()]
        elif choose is None:  # nothing subscribes to this stream
            if tracked and spout and tup_id is not None:
                inst.complete(tup_id, 0.0)  # a tree without spans is complete at once
            return ()
        else:
            batch = batches[choose(values)]
        if tracked:
            if spout and tup_id is not None:  # new_value(), fresh_root() and AckTracker.start() inlined
                value = bits(64) or 1
                root = task_bits | (value & ROOT_BITS)  # the span value's random bits serve the root too
                entry = [tup_id, value, clock()]
                if trees.setdefault(root, entry) is not entry:  # an open tree has this root
                    root = inst.tracker.open_root(task_id, tup_id, value, entry[2])
                if batch.stream != stream:
                    batch.open_run(stream, True)
                vals = batch.vals
                spans = batch.spans
                spans += (len(vals), root, value)  # Batch.add_span inlined
                batch.anchor = NO_ANCHOR
                vals.append(values)
                if len(vals) >= batch.limit:
                    send(batch)
                return batch.targets
            if not auto_anchor:
                anchor = None
            else:
                anchor = inst.anchor_span or inst.anchor()
            if batch.stream != stream:
                batch.join(stream, values, anchor)
                if batch.full:
                    send(batch)
                return batch.targets
            vals = batch.vals
            if anchor is not batch.anchor:  # a new span (Batch.join inlined): a sentence's first word
                spans = batch.spans
                if anchor is None:
                    spans += (len(vals), None, 0)
                else:
                    share = bits(64) or 1
                    anchor.delta ^= share
                    spans += (len(vals), anchor.roots, share)
                    anchor.carried = spans
                    anchor.at = len(spans) - 1
                batch.anchor = anchor
            vals.append(values)
            if len(vals) >= batch.limit:
                send(batch)
        elif batch.stream == stream:
            vals = batch.vals
            vals.append(values)
            if len(vals) >= batch.limit:
                send(batch)
        else:
            append(batch, stream, values)
        return batch.targets

    return emit


def fast_emit_many(inst: InstanceState, emit: EmitMethod) -> EmitManyMethod:
    """A bolt-signature ``emit_many`` that routes a whole list at once (a process of its own, not a
    chain member: a chain hands its list on by call, ``edge.py``).

    On a stream of the fast path (``fast_emit``), the values are split per destination in emit
    order (a known key's destination found at C speed in the same ``str_key_cache`` as ``emit``'s)
    and each destination's share goes into its batch by slices (``Batch.fill``), with no Python
    call a tuple. At least once, a bolt's share is anchored as ``emit`` anchors it: one span a
    batch, a share of the received span's value (``Batch.join``); a spout's list with ids is one
    tree for the call (``start_trees``). Anything else (another stream,
    explicit anchors, values of the wrong length) goes through ``emit``, one call a tuple.
    """
    fast = inst.fast_routes
    batches = inst.batches
    send = inst.send_batch
    emits = inst.emit_cell
    tracked = inst.reliable
    auto_anchor = tracked and not inst.is_spout and inst.auto_anchor
    cut = compiled("cut_rows")

    def shares_of(route: tuple, values_list: list) -> Optional[List[tuple]]:
        """``per_destination``'s shares (none where nothing subscribes), or None where a row is not
        ``route[0]`` values long: every tuple is then emitted alone, as ``emit`` takes it. Cut by key
        in C where built."""
        if cut is not None and route[2] is not None:  # route[2]: the fields grouping's known keys
            shares = cut(route[2], route[1], route[0], values_list)
            if shares is not None:
                return shares
        if set(map(len, values_list)) != {route[0]}:  # route[0]: the values an emit must have
            return None
        if route[5] is None:  # route[5]: the chooser; None: nothing subscribes to this stream
            return []
        return per_destination(route, batches, values_list)

    def row_spans(stream: str, shares: List[tuple], root: int) -> int:
        """A spout's list, cut into ``shares``, into its batches in the tree ``root`` (a span a
        destination batch); the XOR of the spans' values (``start_trees``)."""
        xor = 0
        for batch, vals in shares:
            while True:
                value = new_value()
                xor ^= value
                batch.add_span(stream, vals[0], root, value)
                vals = batch.fill(stream, vals[1:])
                if batch.full:
                    send(batch)
                if not vals:
                    break
        return xor

    def each(component: object, values_list: list, stream: str, anchors: Optional[Iterable[Tuple]],
             tup_ids: Optional[Sequence[object]]) -> None:
        if tup_ids is None:
            for values in values_list:
                emit(component, values, stream, anchors, None, None)
            return
        if len(tup_ids) != len(values_list):
            raise ValueError(f"emit_many: {len(values_list)} values but {len(tup_ids)} tup_ids")
        for values, tup_id in zip(values_list, tup_ids):
            emit(component, values, stream, None, None, tup_id)

    def emit_many(component: object, values_list: list, stream: str = DEFAULT_STREAM,
                  anchors: Optional[Iterable[Tuple]] = None, tup_ids: Optional[Sequence[object]] = None) -> None:
        if values_list.__class__ is not list:  # any iterable, as a loop of emits takes
            values_list = list(values_list)
        route = fast.get(stream)
        if (route is None or not values_list or (tracked and anchors is not None)
                or (tracked and tup_ids is not None and some_untracked(tup_ids))):  # a spout's ids, some None
            each(component, values_list, stream, anchors, tup_ids)
            return
        shares = shares_of(route, values_list)
        if shares is None:
            each(component, values_list, stream, anchors, tup_ids)
            return
        if tup_ids is not None and len(tup_ids) != len(values_list):
            raise ValueError(f"emit_many: {len(values_list)} values but {len(tup_ids)} tup_ids")
        if tracked and tup_ids is not None:  # a spout's ids (a bolt's emit_many takes none)
            emits[0] += len(values_list)
            start_trees(inst, tup_ids, (lambda root: row_spans(stream, shares, root)) if shares else None)
            return
        emits[0] += len(values_list)
        if not shares:  # nothing subscribes to this stream
            return
        anchor = (inst.anchor_span or inst.anchor()) if auto_anchor else None
        for batch, vals in shares:
            while True:
                if tracked:  # the first of what goes into this batch starts or joins its span
                    batch.join(stream, vals[0], anchor)
                    vals = vals[1:]
                vals = batch.fill(stream, vals)
                if batch.full:
                    send(batch)
                if not vals:
                    break

    return emit_many


def start_trees(inst: InstanceState, tup_ids: Sequence[object], send_spans: Optional[Callable[[int], int]]) -> None:
    """A spout's tuples with ids emitted in one call, at least once: one tree for them all
    (``CallIds``), every span of the call in it, as a chain hands them on (``emit_many`` and
    ``emit_columns`` across processes). The call's tuples are acked together, and a fail of any
    fails them all. ``send_spans(root)`` puts the tuples into their batches in the tree ``root``
    and returns the XOR of the spans' values; None: nothing subscribes, and a tree without spans is
    complete at once."""
    if send_spans is None:
        inst.complete(CallIds(tup_ids), 0.0)
        return
    root = inst.open_tree()
    inst.start_tree(root, CallIds(tup_ids), send_spans(root), 0.0)


def per_destination(route: tuple, batches: Dict[int, Batch], values_list: list) -> List[tuple]:
    """``[(batch, values), ...]``: ``values_list`` split by destination along the fast route ``route``
    (a ``FastEmit`` that subscribes), each share in emit order."""
    _, key_index, key_batches, key_miss, next_task, choose = route
    if key_batches is not None:
        try:
            dests = list(map(key_batches.__getitem__, map(itemgetter(key_index), values_list)))
        except (KeyError, TypeError):  # a key not known yet, or unhashable: each found as ``fast_emit`` does
            dests = []
            for values in values_list:
                key = values[key_index]
                try:
                    dests.append(key_batches[key])
                except KeyError:
                    dests.append(key_miss(key))  # type: ignore[misc]
                except TypeError:
                    dests.append(batches[choose(values)])  # type: ignore[misc]
    elif next_task is not None:
        dests = [batches[next_task()] for _ in values_list]
    else:
        dests = [batches[choose(values)] for values in values_list]  # type: ignore[misc]
    shares: Dict[Batch, list] = {batch: [] for batch in dict.fromkeys(dests)}
    if len(shares) == 1:
        return [(dests[0], values_list)]
    for batch, values in zip(dests, values_list):  # cheaper than a C-level pass a destination from 2 on
        shares[batch].append(values)
    return list(shares.items())


def rows_emit_columns(many: EmitManyMethod) -> EmitColumnsMethod:
    """An ``emit_columns`` that hands the tuples on as rows, through ``many`` (an ``emit_many``)."""
    def emit_columns(component: object, columns: Sequence[Sequence[object]], stream: str = DEFAULT_STREAM,
                     anchors: Optional[Iterable[Tuple]] = None, tup_ids: Optional[Sequence[object]] = None) -> None:
        column_count(columns, stream, None)
        many(component, rows_of(columns), stream, anchors, tup_ids)

    return emit_columns


def fast_emit_columns(inst: InstanceState, many: EmitManyMethod) -> EmitColumnsMethod:
    """A bolt-signature ``emit_columns`` (a list a field) that keeps the tuples as columns to the frame.

    On a stream whose grouping picks one task a tuple without the values (shuffle, global: one
    task for the whole call) or by a fields grouping (each tuple's slot found in bulk,
    ``FastRoute.slots``, then each destination's share cut out of each column at C speed,
    ``per_destination_columns``), each share joins its destination's batch as a columnar run
    (``Batch.add_columns``), cut at the batch size. At least once a bolt's share is anchored as
    ``emit_many`` anchors it: one span a batch; a spout's ids are one tree for the call
    (``start_trees``). Anything else (explicit anchors, a spout's ids of which some are
    None, partial-key, all, custom and direct groupings, streams of the chain's edge) goes through
    ``many`` as rows.
    """
    routes = inst.column_routes
    batches = inst.batches
    send = inst.send_batch
    emits = inst.emit_cell
    tracked = inst.reliable
    trees = tracked and inst.is_spout  # a spout's tuples with ids start trees
    auto_anchor = tracked and not inst.is_spout and inst.auto_anchor

    def emit_columns(component: object, columns: Sequence[Sequence[object]], stream: str = DEFAULT_STREAM,
                     anchors: Optional[Iterable[Tuple]] = None, tup_ids: Optional[Sequence[object]] = None) -> None:
        route = routes.get(stream)
        n = column_count(columns, stream, None if route is None else route.fields)
        if (route is None or (tracked and anchors is not None)
                or (route.subscribed and route.next_task is None and route.slots is None)
                or (trees and tup_ids is not None and some_untracked(tup_ids))):  # as rows: emit_many's
            many(component, rows_of(columns), stream, anchors, tup_ids)
            return
        if tup_ids is not None and len(tup_ids) != n:
            raise ValueError(f"emit_columns: {n} tuples but {len(tup_ids)} tup_ids")
        emits[0] += n
        if trees and tup_ids is not None:
            start_trees(inst, tup_ids, (lambda root: column_spans(stream, columns, route, root))
                        if route.subscribed else None)
            return
        if not route.subscribed or not n:
            return
        anchor = (inst.anchor_span or inst.anchor()) if auto_anchor else None
        for dest, cols, owned in shares_of(route, columns):
            add_columns(batches[dest], stream, cols, anchor, owned, None)

    def column_spans(stream: str, columns: Sequence[Sequence[object]], route: ColumnRoute, root: int) -> int:
        """A spout's columns into their batches as spans in the tree ``root``; the XOR of the spans'
        values (``start_trees``)."""
        xor = 0
        for dest, cols, owned in shares_of(route, columns):
            xor ^= add_columns(batches[dest], stream, cols, None, owned, root)
        return xor

    def add_columns(batch: Batch, stream: str, cols: Sequence[Sequence[object]], anchor: Optional[Span],
                    owned: bool, root: Optional[int]) -> int:
        """``cols`` into ``batch`` as columnar runs, cut at the batch size; the XOR of the values of
        the spans started in the tree ``root`` (``Batch.add_columns``)."""
        n = len(cols[0])
        start = xor = 0
        while start < n:
            if batch.full:
                send(batch)
            room = batch.limit - len(batch.vals)
            part = cols if start == 0 and room >= n else [col[start:start + room] for col in cols]
            xor ^= batch.add_columns(stream, part, min(room, n - start), anchor, tracked, owned or part is not cols,
                                     root)
            start += room
        if batch.full:
            send(batch)
        return xor

    return emit_columns


def shares_of(route: ColumnRoute, columns: Sequence[Sequence[object]]) -> List[tuple]:
    """``[(task, columns, owned), ...]``: where the tuples of ``columns`` go along ``route``, which
    subscribes."""
    if route.next_task is not None:
        return [(route.next_task(), columns, False)]
    return per_destination_columns(route.slots(columns), route, columns)  # type: ignore[misc]


def per_destination_columns(slots: List[int], route: ColumnRoute, columns: Sequence[Sequence[object]]) -> List[tuple]:
    """``[(task, columns, owned), ...]``: ``columns`` split by destination, ``slots`` the slot of each
    tuple in ``route``, each share in emit order (``owned``: lists made here, not the caller's).

    Up to 256 slots the slots are made one byte each, and a task's share is cut out of each column
    by ``compress`` with the bytes turned into its 0/1 selector by ``translate``: C-level passes
    only. Beyond, one Python pass over the tuples."""
    if route.selectors is not None:
        code = bytes(slots)
        shares = []
        for task, table in route.selectors.items():
            selector = code.translate(table)
            count = selector.count(1)
            if count == len(code):
                return [(task, columns, False)]
            if count:
                shares.append((task, [list(compress(col, selector)) for col in columns], True))
        return shares
    at: Dict[int, List[int]] = {}
    owners = route.owners
    for i, slot in enumerate(slots):
        at.setdefault(owners[slot], []).append(i)
    if len(at) == 1:
        return [(owners[slots[0]], columns, False)]
    return [(task, [[col[i] for i in idx] for col in columns], True) for task, idx in at.items()]
