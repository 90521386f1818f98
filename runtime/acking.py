"""At-least-once: Storm's XOR tuple trees, tracked by the spout's own task.

Every tuple a spout emits with an id starts a tree with a random *root*.
The tracker keeps, per root, the XOR of the values still open; the tree is
complete when it is zero (up to a 2**-64 chance): the spout's ``ack(tup_id)``
runs. An explicit fail, or ``topology.message.timeout.secs`` without
completion, runs ``fail(tup_id)``.

What a tree's values are: Storm gives every tuple a random 64-bit edge id.
Squall gives one to every *span*: consecutive tuples of a batch anchored to
the same input (a sentence's words to one count task) or emitted by a spout
with one id. A span's tuples are interchangeable for their trees, since only
the XOR of what they send counts, so the wire carries one ``value`` per span
and no per-tuple id, and a bolt that acks all of a span's tuples sends its
value once (``Span``). A bolt that emits anchored to a span's tuples gives
each child span a random share and XORs it into what the span's ack sends,
which closes the span's value and opens the children's, as Storm's edge ids
do. So a tree still needs every span acked, and a span is acked only once
every tuple in it is.

Where the trees are tracked: in the spout task itself, not in acker tasks
(Storm) or the spout's stream manager (Heron). A root carries its spout's
task id in its top 16 bits, so a bolt sends its acks (ACK frames) straight
to that task through the stream managers, which route them like data. No
process is added, the stream manager still never decodes a batch, and a
spout that dies takes its open trees with it: it starts again from its own
source, which is what a reliable source does anyway (e.g. a Kafka offset).

A spout's call that emits many tuples with ids (``emit_many``, ``emit_columns``) is
one tree for them all (``CallIds``): every span of the call would be in each of
their trees, so those trees would open, take acks and close together. One ack
a span closes it for the call, and its completion or failure is each tuple's.

``AckTracker`` is a pure state machine: the time is an argument.
"""
from __future__ import annotations

import os
import random
from itertools import repeat
from operator import is_
from typing import Callable, List, Optional, Sequence, Union

from squall.logical import MAX_SPOUT_TASK

TASK_SHIFT = 64 - MAX_SPOUT_TASK.bit_length()  # a root: the spout task above, random bits below
ROOT_BITS = (1 << TASK_SHIFT) - 1  # a root's random bits

_generator = random.Random()  # seeded from os.urandom: every process has its own sequence,
os.register_at_fork(after_in_child=_generator.seed)  # a forked child too (random.Random() alone is not reseeded)
random_bits = _generator.getrandbits
SYSTEM_RANDOM_BITS = random_bits  # the compiled emit draws from a generator of its own instead (_emit.c)


def new_root(spout_task: int) -> int:
    """A tree root naming its spout task (top 16 bits; task ids start at 1, so a root is never 0)
    and 48 random bits."""
    return (spout_task << TASK_SHIFT) | random_bits(TASK_SHIFT)


def root_task(root: int) -> int:
    """The spout task that tracks ``root``'s tree."""
    return root >> TASK_SHIFT


def new_value() -> int:
    """A random, non-zero 64-bit value: a span's, or a share of one."""
    return random_bits(64) or 1


Roots = Union[int, List[int]]  # a span's trees: its root (an int), or a list of roots (anchored to several trees)
SpanValue = Union[int, List[int]]  # a span's value: one for every root, or one per root (parallel to its roots)


def roots_of(roots: Roots) -> Sequence[int]:
    """``roots`` as a sequence: one tree's root is sent as a bare int (a list costs ~40 ns to pack
    and as much to unpack, on every span)."""
    return (roots,) if roots.__class__ is int else roots


class Span:
    """Tuples received in one span: their trees (``roots``) and what acking them all sends.

    ``value`` is the span's value from the wire: an int for every root, or a list parallel to
    ``roots`` (a span anchored to several inputs). ``delta`` is the XOR of the shares handed to
    child spans. ``carried``/``at``: where the last child span's value sits in a batch not sent
    yet (``InstanceState.send`` empties a run's span list once it is on the wire), so that the span's
    own ack can *ride* on it instead of going out in an ACK frame. ``open`` counts the tuples not
    acked or failed yet, for bolts that ack themselves (``auto_ack`` off).

    A bolt under ``auto_ack`` makes one only for a span it anchors to or fails
    (``ReliableBoltInstance.open_span``); a bolt that acks itself, one per span it receives.
    """

    __slots__ = ("roots", "value", "delta", "carried", "at", "open", "failed")

    def __init__(self, roots: Roots, value: SpanValue, tuples: int = 0) -> None:
        self.roots = roots
        self.value = value
        self.delta = 0
        self.carried: Optional[list] = None
        self.at = 0
        self.open = tuples
        self.failed = False

    def rest(self) -> SpanValue:
        """What the span's ack sends: its value XOR the shares its children took."""
        if self.value.__class__ is int:
            return self.value ^ self.delta
        return [v ^ self.delta for v in self.value]

    def ride(self) -> bool:
        """Put the span's ack into its last child span's value, if that has not been sent; False if
        it has (the ack must go out in an ACK frame).

        The child's trees are the span's own, so acking the child delivers the span's ack too; the
        trees' XOR is unchanged and still needs the child acked (a lost carrier leaves them open
        until their timeout, as it would without the ride).
        """
        carried = self.carried
        if carried is None or len(carried) <= self.at:
            return False
        rest = self.rest()
        share = carried[self.at]
        carried[self.at] = share ^ rest if rest.__class__ is int else [share ^ r for r in rest]
        return True


def shared_span(anchors: list) -> tuple:
    """The roots and per-root values of a child span anchored to tuples of several spans.

    Each anchor span hands the child its own share, so a root that several anchors have gets the
    XOR of their shares. (One share for all, as Storm's one edge id per tuple, would cancel out in
    such a root, and the child would escape that tree.)
    """
    values: dict = {}
    for span in anchors:
        share = new_value()
        span.delta ^= share
        for root in roots_of(span.roots):
            values[root] = values.get(root, 0) ^ share
    if len(values) == 1:
        return next(iter(values.items()))
    return list(values), list(values.values())


class CallIds(tuple):
    """The ids of the tuples a spout emitted with ids in one call (``emit_many``, ``emit_columns``),
    tracked as one tree. Every span of such a call is in all of its tuples' trees, so those trees
    would open, take acks and close together: one stands for them all, and its completion or
    failure is each tuple's. (One ack a span instead of one a tuple: what makes a batch at least
    once cheap at the spout.)"""

    __slots__ = ()


def ids_of(tup_id: object) -> Sequence[object]:
    """The tup_ids a tree stands for: a call's (``CallIds``), or its one tuple's."""
    return tup_id if tup_id.__class__ is CallIds else (tup_id,)  # type: ignore[return-value]


def some_untracked(tup_ids: Sequence[object]) -> bool:
    """A spout's call with ids of which some are None: it goes a tuple at a time, and only the tuples
    with ids start trees (``emit_many`` and ``emit_columns``, across processes and in a chain). By
    identity, at C speed."""
    return any(map(is_, tup_ids, repeat(None)))


class AckTracker:
    """The open trees of one spout task: root -> [tup_id, xor of its open values, emitted at]. A
    tree's ``tup_id`` is a ``CallIds`` where it stands for the tuples of one call.

    The dict keeps emission order (a tree's entry is made when it starts and
    never moved), so the trees to time out are always at its front. Its length
    is the tuples pending (``topology.max.spout.pending`` counts tuples, not trees).
    """

    def __init__(self, timeout: float, compiled_ack_all: Optional[Callable] = None):
        self.timeout = timeout
        self.trees: dict = {}
        self.extra = 0  # the open trees' tuples beyond one a tree (calls' trees)
        self.compiled_ack_all = compiled_ack_all  # ack_all's loop in C (runtime/instance/_emit.c), where built

    def __len__(self) -> int:
        return len(self.trees) + self.extra

    def fresh_root(self, spout_task: int) -> int:
        """A new root no open tree has (48 random bits: with 100,000 trees open, one draw in 3e9
        collides, and a collision would lose the older tree's id)."""
        root = new_root(spout_task)
        while root in self.trees:
            root = new_root(spout_task)
        return root

    def open_root(self, spout_task: int, tup_id: object, xor: int, now: float) -> int:
        """``start`` a tree under a fresh root; returns the root."""
        root = self.fresh_root(spout_task)
        self._open(root, tup_id, xor, now)
        return root

    def start(self, root: int, tup_id: object, xor: int, now: float) -> bool:
        """A tree whose first spans XOR to ``xor``; False if it is complete already (no span at all)."""
        if xor == 0:
            return False
        self._open(root, tup_id, xor, now)
        return True

    def _open(self, root: int, tup_id: object, xor: int, now: float) -> None:
        self.trees[root] = [tup_id, xor, now]
        if tup_id.__class__ is CallIds:
            self.extra += len(tup_id) - 1  # type: ignore[arg-type]

    def ack_all(self, acks: list, now: float) -> tuple:
        """Close and open values of trees, for a flat ``[root, value, root, value, ...]``: the tup_ids of
        the trees completed, in order, and the sum of their seconds since emitted. An unknown root
        (completed, failed, timed out, or of another run of this task) is ignored. (One call per ACK
        frame: this is every tuple's cost at the spout.)"""
        if self.compiled_ack_all is not None:
            done, latency, calls_extra = self.compiled_ack_all(self.trees, acks, now, CallIds)
            self.extra -= calls_extra
            return done, latency
        trees = self.trees
        done: list = []
        emitted = 0.0
        for i in range(0, len(acks), 2):
            entry = trees.get(acks[i])
            if entry is not None:
                entry[1] ^= acks[i + 1]
                if not entry[1]:
                    del trees[acks[i]]
                    tup_id = entry[0]
                    if tup_id.__class__ is CallIds:
                        done += tup_id
                        emitted += entry[2] * len(tup_id)
                        self.extra -= len(tup_id) - 1
                    else:
                        done.append(tup_id)
                        emitted += entry[2]
        return done, len(done) * now - emitted

    def fail(self, root: int) -> Sequence[object]:
        """The tree failed: the tup_ids it stood for (none if it is not open)."""
        entry = self.trees.pop(root, None)
        if entry is None:
            return ()
        if entry[0].__class__ is CallIds:
            self.extra -= len(entry[0]) - 1
        return ids_of(entry[0])

    def expire(self, now: float) -> list:
        """The tup_ids of trees open for ``timeout`` seconds or more, removed, oldest first."""
        expired: list = []
        cutoff = now - self.timeout
        trees = self.trees
        while trees:
            root = next(iter(trees))
            if trees[root][2] > cutoff:
                break
            expired += self.fail(root)
        return expired
