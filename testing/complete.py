"""``complete_topology``: run a topology with mocked spouts until every tuple is processed, and return what
each component emitted (Storm's ``Testing.completeTopology`` with ``MockedSources``).

The topology runs for real on a ``LocalCluster``, at least once, with two changes to its plan:

- each mocked spout is replaced by a ``MockedSpout`` that emits the given values (task *i* of *n* the
  values *i*, *i + n*, ...) with an id each, emits again what fails, and writes a marker once all its
  tuples are acked, i.e. their whole trees are processed;
- a ``CaptureBolt`` (one task) takes every stream of every component (direct streams excepted: their
  emitter picks the task) on global grouping and writes each tuple down before acking it.

When every mocked spout task has written its marker, every tuple its values caused has been captured:
the topology is killed and the captured tuples are returned. What cannot complete: a bolt that does not
anchor what it emits (its tuples are captured, but nothing waits for them), an event-time window that no
later tuple closes, a spout that is not mocked (its tuples are captured while the run lasts).
"""
from __future__ import annotations

import os
import shutil
import tempfile
from collections import defaultdict
from typing import Hashable, Mapping, Optional, Sequence

import msgpack

from squall.component import Bolt, Spout, TopologyContext, Tuple
from squall.idl import replace, schema
from squall.testing.cluster import LocalCluster, Submittable, _plan_of
from squall.testing.wait import wait_until
from squall.logical import encode_config

DIR_KEY = "testing.dir"  # the folder the harness's components share (a user key: squall.* is Squall's own)
CAPTURE = "capture"


class MockedSpout(Spout):
    """Emits its share of ``mocked-<component>.msgpack`` (in ``testing.dir``), each with an id; writes
    ``done-<component>-<task>`` once every one is acked."""

    def initialize(self, config: Mapping[str, object], context: TopologyContext) -> None:
        self.dir = config[DIR_KEY]
        component = context.get_component_id()
        tasks = context.get_component_tasks(component)
        index = tasks.index(context.get_task_id())
        with open(os.path.join(self.dir, f"mocked-{component}.msgpack"), "rb") as f:
            values = msgpack.unpackb(f.read(), raw=False)
        self.values = {i: values[i] for i in range(index, len(values), len(tasks))}
        self.queue = sorted(self.values)
        self.pending: set = set()
        self.marker = os.path.join(self.dir, f"done-{component}-{context.get_task_id()}")

    def next_tuple(self) -> None:
        for _ in range(min(len(self.queue), 100)):
            i = self.queue.pop(0)
            self.pending.add(i)
            self.emit(self.values[i], tup_id=i)
        self._done()

    def ack(self, tup_id: Hashable) -> None:
        self.pending.discard(tup_id)
        self._done()

    def fail(self, tup_id: Hashable) -> None:
        self.pending.discard(tup_id)
        self.queue.append(tup_id)

    def _done(self) -> None:
        if not self.queue and not self.pending and not os.path.exists(self.marker):
            with open(self.marker, "w"):
                pass


class CaptureBolt(Bolt):
    """Writes every tuple it gets (component, stream, task, values) to ``captured-<task>.msgpack`` in
    ``testing.dir`` before it is acked."""

    def initialize(self, config: Mapping[str, object], context: TopologyContext) -> None:
        self.file = open(os.path.join(config[DIR_KEY], f"captured-{context.get_task_id()}.msgpack"), "ab")
        self.pack = msgpack.Packer(use_bin_type=True).pack

    def process(self, tup: Tuple) -> None:
        if tup.is_tick:
            return
        self.file.write(self.pack([tup.component, tup.stream, tup.task, list(tup.values)]))
        self.file.flush()

    def close(self) -> None:
        self.file.close()


class CompletedTopology:
    """What each component of a completed run emitted, as the capture bolt got it."""

    def __init__(self, captured: list):
        self._tuples: dict = defaultdict(list)
        for component, stream, _task, values in captured:
            self._tuples[(component, stream)].append(values)

    def tuples(self, component: str, stream: str = "default") -> list:
        """The values of every tuple ``component`` emitted on ``stream``, in the order they were captured
        (a tuple replayed after a failure shows as often as it was processed)."""
        return list(self._tuples.get((component, stream), []))

    def __repr__(self) -> str:
        counts = ", ".join(f"{c}/{s}: {len(v)}" for (c, s), v in sorted(self._tuples.items()))
        return f"CompletedTopology({counts})"


def complete_topology(topology: Submittable, mocked: Mapping[str, Sequence[Sequence[object]]],
                      config: Optional[Mapping[str, object]] = None, timeout: float = 60.0,
                      cluster: Optional[LocalCluster] = None) -> CompletedTopology:
    """Run ``topology`` with the spouts named in ``mocked`` emitting the given values (lists of field
    values, msgpack-able) until every tuple they cause is processed; return what each component
    emitted. ``config`` goes over the topology's own; ``cluster``: a running ``LocalCluster`` to use
    (by default one is started, and stopped after)."""
    plan = _plan_of(topology)
    spouts = {c.name for c in plan.components if c.kind == schema.ComponentKind.SPOUT}
    unknown = sorted(set(mocked) - spouts)
    if unknown or not mocked:
        raise ValueError(f"complete_topology: mocked names {unknown or 'no spout'}; the topology's spouts are "
                         f"{', '.join(sorted(spouts))}")
    work = tempfile.mkdtemp(prefix="squall-complete-")
    for name, values in mocked.items():
        with open(os.path.join(work, f"mocked-{name}.msgpack"), "wb") as f:
            f.write(msgpack.packb([list(v) for v in values], use_bin_type=True))
    plan = _with_mocks_and_capture(plan, set(mocked))
    markers = sum(c.parallelism for c in plan.components if c.name in mocked)
    overrides = {**(config or {}), DIR_KEY: work, "topology.reliability.mode": "ATLEAST_ONCE"}
    owned = cluster is None
    cluster = cluster or LocalCluster().start()
    try:
        name = cluster.submit(plan, overrides)
        try:
            wait_until(lambda: len([f for f in os.listdir(work) if f.startswith("done-")]) >= markers, timeout,
                       f"every tuple of the mocked spouts {sorted(mocked)} to be fully processed")
        finally:
            cluster.kill(name)
        captured: list = []
        for path in sorted(f for f in os.listdir(work) if f.startswith("captured-")):
            with open(os.path.join(work, path), "rb") as f:
                captured.extend(msgpack.Unpacker(f, raw=False))
        return CompletedTopology(captured)
    finally:
        if owned:
            cluster.close()
        shutil.rmtree(work, ignore_errors=True)


def _with_mocks_and_capture(plan: schema.Topology, mocked: set) -> schema.Topology:
    """The plan with each mocked spout's class replaced and a capture bolt on every stream."""
    names = {c.name for c in plan.components}
    capture = next(n for n in (CAPTURE, *(f"{CAPTURE}_{k}" for k in range(1, 100))) if n not in names)
    components = [replace(c, class_name=f"{__name__}:MockedSpout") if c.name in mocked else c
                  for c in plan.components]
    inputs = [schema.InputStream(component=c.name, stream=s.name, grouping=schema.GroupingKind.GLOBAL, fields=[])
              for c in plan.components for s in c.outputs if not s.direct]
    components.append(schema.Component(
        name=capture, kind=schema.ComponentKind.BOLT, class_name=f"{__name__}:CaptureBolt", parallelism=1,
        outputs=[], inputs=inputs, config=encode_config({}, capture), auto_ack=True))
    return replace(plan, components=components)
