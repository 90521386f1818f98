"""A task's part in checkpoints (docs/state.md): markers, alignment, saving, rollback.

``Checkpointing`` is the instance's rules for the steps the topology master
sends (``CheckpointMessage``) and the MARKER frames upstream tasks send in
line with their tuples:

- START (spouts): save the state, then send a marker to every downstream task
  after everything emitted before it.
- A marker from an upstream task: from then on that input's frames (tuples
  and later markers) are held, in order, until every input has sent the
  marker (*alignment*); then the task saves, sends its own markers, and
  handles what it held. Held tuples are not reported consumed, so the stream
  manager's queue bound turns a long alignment into backpressure. Past
  ``squall.state.alignment.buffer.mb`` held, or when a newer checkpoint's
  marker arrives, the checkpoint is abandoned here (it never completes; the
  next one will).
- Saving: ``pre_save``, the state to storage, SAVED to the topology master
  (bytes, ms to save, ms of alignment). A storage that cannot be written (a
  full disk) fails the checkpoint, not the task: FAILED with the storage's
  message goes to the topology master (which abandons the checkpoint), the
  task's errors get it as a runtime failure (``CHECKPOINT_STORAGE``), the
  markers still go downstream (no task waits on an alignment that cannot
  complete), and the task goes on; the next checkpoint tries again.
- DONE: ``post_save``; RESTORE: drop what was emitted and not sent, and what
  was held, load the checkpoint's state (``init_state`` again), enter the new
  epoch and report RESTORED; RESUME: spouts emit again. Tuples and markers of
  another epoch are dropped where they arrive.
"""
from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Optional

import msgpack

from squall.idl import schema
from squall.logical import find_component
from squall.metrics_schema import (CHECKPOINT_ALIGN_MS, CHECKPOINT_BYTES, CHECKPOINT_SAVE_MS, CHECKPOINT_SAVES,
                                   CHECKPOINT_STALE_FRAMES)
from squall.runtime.protocol import DATA_HEADER_SIZE, MARKER, control_frame, data_frame
from squall.runtime.user_errors import CHECKPOINT_STORAGE
from squall.state import StorageError
from squall.state.storage import CheckpointStorage, saved_tasks, task_file
from squall.stateful import KeyValueState, decode_state, encode_state, group_owner

if TYPE_CHECKING:  # the instance state owns this object: a runtime import would be a cycle
    from squall.runtime.instance.state import InstanceState

log = logging.getLogger(__name__)

Step = schema.CheckpointStep


class Checkpointing:
    def __init__(self, inst: "InstanceState", stateful: bool, key_groups: int, buffer_bytes: float):
        self.inst = inst
        self.stateful = stateful
        self.key_groups = key_groups
        self.buffer_bytes = buffer_bytes
        self.storage: Optional[CheckpointStorage] = None  # set by the process (runtime/instance/loop.py)
        self.state = KeyValueState()
        self.restore_from = 0  # the checkpoint the state comes from (0: none, the empty state)
        self.restoring = True  # until the first RESUME: a spout does not emit
        self.sources: set = set()  # upstream tasks: a marker from each completes an alignment
        self.downstream: list = []  # tasks this task's markers go to
        self.index, self.parallelism = 0, 1
        self.aligning: Optional[int] = None  # the checkpoint being aligned
        self.last_saved = 0
        self.abandoned = 0  # markers of checkpoints up to this one are ignored
        self.marked: set = set()
        self.held: list = []  # frames of marked inputs, in arrival order
        self.held_bytes = 0
        self.align_started = 0.0
        self.stale_frames = 0  # of another epoch, dropped (metrics)
        self.saves = 0
        self.save_ms = self.align_ms = 0.0
        self.saved_bytes = 0

    # plan ---------------------------------------------------------------------------
    def on_tasks(self, component_tasks: dict) -> None:
        """The plan's tasks: this task's inputs, the tasks its markers go to, its index."""
        inst = self.inst
        topology = inst.topology
        me = next(c for c in topology.components if c.name == inst.component_name)
        ups = {i.component for i in me.inputs}
        self.sources = {t for c in ups for t in component_tasks.get(c, ())}
        downs = sorted({c.name for c in topology.components if any(i.component == me.name for i in c.inputs)})
        self.downstream = [t for c in downs for t in sorted(component_tasks.get(c, ()))]
        mine = sorted(component_tasks.get(me.name, ()))
        if inst.task_id in mine:  # else it is retiring (a scale down): it keeps what it was
            self.index, self.parallelism = mine.index(inst.task_id), len(mine)

    def init_state(self) -> None:
        """Load the state to restore (once the plan says which task of how many this is) and hand it to
        the component (after ``initialize``)."""
        if self.stateful:
            self.state = KeyValueState(self.load(self.restore_from) if self.restore_from else {})
            self.inst.component.init_state(self.state)

    # frames ---------------------------------------------------------------------------
    def holds(self, src: int) -> bool:
        """Frames from ``src`` wait: it sent the marker of the checkpoint being aligned."""
        return src in self.marked

    def hold(self, f: bytes) -> None:
        self.held.append(f)
        self.held_bytes += len(f)
        if self.held_bytes > self.buffer_bytes:
            log.warning("task %d: checkpoint %d abandoned here: %.1f MB held for alignment (over "
                        "squall.state.alignment.buffer.mb)", self.inst.task_id, self.aligning,
                        self.held_bytes / 1e6)
            self.abandoned = self.aligning
            self._release()

    def on_marker(self, f: bytes) -> None:
        src, cid, epoch = msgpack.unpackb(memoryview(f)[DATA_HEADER_SIZE:], raw=False)
        if epoch != self.inst.epoch or cid <= self.abandoned:
            return
        if src in self.marked:  # a later marker of an input already aligned: it waits behind its tuples
            self.hold(f)
            return
        if self.aligning is not None and cid > self.aligning:
            log.info("task %d: checkpoint %d abandoned here: checkpoint %d's marker came first",
                     self.inst.task_id, self.aligning, cid)
            self.abandoned = self.aligning
            self._release()
            self.on_marker(f)
            return
        if self.aligning is None:
            if cid <= self.last_saved:
                return  # a checkpoint this task has saved
            self.aligning, self.marked, self.align_started = cid, set(), time.perf_counter()
        elif cid < self.aligning:
            return
        self.marked.add(src)
        if self.marked >= self.sources:
            align_ms = (time.perf_counter() - self.align_started) * 1000
            self.save(cid, align_ms)
            self._release()

    def _release(self) -> None:
        """End the alignment: what was held is handled now, in order (it may start the next)."""
        held = self.held
        self.aligning, self.marked, self.held, self.held_bytes = None, set(), [], 0
        for f in held:
            self.inst.on_frame(f, time.perf_counter())

    # steps ------------------------------------------------------------------------------
    def on_step(self, msg: schema.CheckpointMessage) -> None:
        step = msg.step
        if step == Step.START:
            if msg.epoch == self.inst.epoch and not self.restoring:
                self.save(msg.checkpoint_id, 0.0)
        elif step == Step.DONE:
            if self.stateful and msg.checkpoint_id <= self.last_saved:
                self.inst.component.post_save(msg.checkpoint_id)
            self.inst.on_checkpoint_done(msg.checkpoint_id)
        elif step == Step.RESTORE:
            self.restore(msg.checkpoint_id, msg.epoch)
        elif step == Step.RESUME:
            if msg.epoch == self.inst.epoch and self.restoring:
                self.restoring = False
                log.info("task %d resumes in epoch %d", self.inst.task_id, msg.epoch)

    def save(self, cid: int, align_ms: float) -> None:
        """Save the state for checkpoint ``cid``, send the markers after what was emitted, report SAVED
        (FAILED when the storage could not take the state)."""
        inst = self.inst
        t0 = time.perf_counter()
        size = 0
        failure: Optional[StorageError] = None
        if self.stateful:
            inst.component.pre_save(cid)
            data = encode_state(self.state, self.key_groups)
            try:
                self.storage.write(task_file(inst.topology.name, cid, inst.component_name, self.index,
                                             self.parallelism), data)
            except StorageError as e:
                failure = e
            size = len(data)
        save_ms = (time.perf_counter() - t0) * 1000
        inst.flush_all()  # what was emitted before the marker leaves before it
        if failure is None:  # else the acks held for this checkpoint wait for the next one
            inst.on_checkpoint_saved(cid)
        marker = inst.packb([inst.task_id, cid, inst.epoch])
        for task in self.downstream:
            inst.out += data_frame(task, marker, 0, MARKER)
        if failure is not None:
            self._failed(cid, failure)
            return
        inst.out += control_frame(checkpoint=schema.CheckpointMessage(
            step=Step.SAVED, checkpoint_id=cid, epoch=inst.epoch, task_id=inst.task_id, bytes=size,
            save_ms=save_ms, align_ms=align_ms))
        self.last_saved = cid
        self.saves += 1
        self.save_ms += save_ms
        self.align_ms = max(self.align_ms, align_ms)
        self.saved_bytes += size

    def _failed(self, cid: int, failure: StorageError) -> None:
        """Checkpoint ``cid`` could not be saved here: the topology master abandons it; the task goes on."""
        inst = self.inst
        log.error("task %d: checkpoint %d failed: %s", inst.task_id, cid, failure)
        inst.errors.runtime_failure(CHECKPOINT_STORAGE, str(failure))
        inst.out += control_frame(checkpoint=schema.CheckpointMessage(
            step=Step.FAILED, checkpoint_id=cid, epoch=inst.epoch, task_id=inst.task_id, error=str(failure)))
        self.abandoned = max(self.abandoned, cid)

    def restore(self, cid: int, epoch: int) -> None:
        """Roll back to checkpoint ``cid`` (0: the empty state) in ``epoch``."""
        inst = self.inst
        inst.drop_unsent(self.held)
        self.aligning, self.marked, self.held, self.held_bytes = None, set(), [], 0
        self.abandoned = self.last_saved = 0
        inst.epoch = epoch
        self.restoring = True
        self.restore_from = cid
        if inst.initialized:  # else initialize() comes first, then init_state (InstanceState.on_physical_plan)
            self.init_state()
        inst.on_restored()
        inst.out += control_frame(checkpoint=schema.CheckpointMessage(
            step=Step.RESTORED, checkpoint_id=cid, epoch=epoch, task_id=inst.task_id))
        log.info("task %d restored %s in epoch %d%s", inst.task_id, f"checkpoint {cid}" if cid else "the empty state",
                 epoch, f" ({len(self.state)} keys)" if self.stateful and inst.initialized else "")

    def load(self, cid: int) -> dict:
        """This task's keys of checkpoint ``cid``: its own file when the parallelism is the one saved,
        else every key of the component whose key group it now owns (a rescalable spout: every key, and
        it keeps those of the units of its source it now reads)."""
        inst = self.inst
        saved = saved_tasks(self.storage, inst.topology.name, cid, inst.component_name)
        own = [path for index, par, path in saved if par == self.parallelism and index == self.index]
        if own or not saved or all(par == self.parallelism for _, par, _ in saved):
            return {key: value for path in own for _, key, value in decode_state(self.storage.read(path))}
        union = bool(find_component(inst.topology, inst.component_name).rescalable)
        out: dict = {}
        for _, _, path in saved:
            for group, key, value in decode_state(self.storage.read(path)):
                if union or group_owner(group % self.key_groups, self.parallelism, self.key_groups) == self.index:
                    if key in out:
                        log.warning("task %d: key %r was in two tasks' state; keeping the first", inst.task_id, key)
                        continue
                    out[key] = value
        return out

    def metrics(self) -> dict:
        out = {CHECKPOINT_SAVES: self.saves, CHECKPOINT_SAVE_MS: round(self.save_ms, 3),
               CHECKPOINT_ALIGN_MS: round(self.align_ms, 3), CHECKPOINT_BYTES: self.saved_bytes,
               CHECKPOINT_STALE_FRAMES: self.stale_frames}
        self.saves = self.saved_bytes = self.stale_frames = 0
        self.save_ms = self.align_ms = 0.0
        return out

