"""The topology master's checkpoint coordinator: a pure state machine (docs/state.md).

Events in: a published physical plan (``on_plan``), a task's report
(``on_report``: SAVED, FAILED or RESTORED), the clock (``on_tick``). Actions out:
``Broadcast`` a ``CheckpointMessage`` to every stream manager (which hands it
to its tasks), ``Record`` the ``Checkpoints`` record (and, once it is
written, broadcast what waited for it), ``Collect`` garbage in storage.

- Every ``interval`` while no restore is under way, a checkpoint starts
  (START, to the spouts). It is complete once every task of the plan has
  reported SAVED for it; the record is written first, then DONE goes out
  (``post_save`` only ever sees durable checkpoints). One not complete within
  ``timeout`` is abandoned; the next starts at the next interval. One a task
  reports FAILED (its checkpoint storage failed) is abandoned at once, and the
  storage's message is kept (``stats().last_failure``).
- A plan whose tasks or processes differ from the last one (a process died
  and was restarted, a stream manager or a container came back, an update)
  or the first plan of this topology master's term starts a restore: every
  task rolls back to the newest complete checkpoint (0: the empty state) in a
  new epoch (RESTORE). Once every task has reported RESTORED, RESUME lets the
  spouts emit again. A restore that does not finish within ``timeout`` (a
  task died meanwhile) starts again in a new epoch.

Checkpoint ids and epochs only grow, across topology masters too: the record
holds the highest of each, and is written when a checkpoint starts.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Callable, Optional

from squall.idl import schema

log = logging.getLogger(__name__)

Step = schema.CheckpointStep


@dataclass(frozen=True)
class Broadcast:
    """Send ``message`` (a ``CheckpointMessage``) to every stream manager, for its tasks."""

    message: schema.CheckpointMessage


@dataclass(frozen=True)
class Record:
    """Write ``record`` (``Checkpoints``) to the state manager; then carry out ``then`` (if the write
    failed, ``then`` is dropped: a checkpoint nobody can find is not complete)."""

    record: schema.Checkpoints
    then: tuple = ()


@dataclass(frozen=True)
class Collect:
    """Delete from storage every checkpoint folder but ``keep``'s (ids)."""

    keep: tuple


class _InFlight:
    def __init__(self, checkpoint_id: int, started: float, tasks: set, packing_plan_id: str):
        self.checkpoint_id = checkpoint_id
        self.started = started
        self.waiting = set(tasks)
        self.packing_plan_id = packing_plan_id
        self.bytes = 0
        self.align_ms = 0.0


class _Restore:
    def __init__(self, epoch: int, checkpoint_id: int, started: float, tasks: set, failed_at: float):
        self.epoch = epoch
        self.checkpoint_id = checkpoint_id
        self.started = started
        self.waiting = set(tasks)
        self.failed_at = failed_at


def _identity(pplan: schema.PhysicalPlan) -> tuple:
    """What a restore follows a change of: every task's process and every stream manager's."""
    return (pplan.packing_plan_id,
            frozenset((i.id.task_id, i.container, i.pid) for i in pplan.instances),
            frozenset((s.container, s.pid) for s in pplan.stmgrs))


class CheckpointCoordinator:
    def __init__(self, interval: float, timeout: float, kept: int, mode: str, record: Optional[schema.Checkpoints] = None,
                 wall: Callable[[], float] = time.time):
        self.interval = interval
        self.timeout = timeout
        self.kept = kept
        self.mode = mode
        self.record = record or schema.Checkpoints(complete=[], last_id=0, epoch=0)
        self.wall = wall
        self.tasks: set = set()
        self.packing_plan_id = ""
        self.identity: Optional[tuple] = None
        self.inflight: Optional[_InFlight] = None
        self.restore: Optional[_Restore] = None
        self.next_start = 0.0
        self.completed = self.failed = self.restores = 0
        self.last_restore_ms: Optional[float] = None
        self.last_failure: Optional[str] = None  # the last checkpoint a task could not save, and why

    @property
    def epoch(self) -> int:
        return self.record.epoch

    def latest(self) -> int:
        """The newest complete checkpoint (0: none)."""
        return self.record.complete[0].checkpoint_id if self.record.complete else 0

    # events -----------------------------------------------------------------------
    def on_plan(self, pplan: schema.PhysicalPlan, now: float) -> list:
        """A physical plan was published: a new one (or the term's first) rolls every task back."""
        identity = _identity(pplan)
        if identity == self.identity:
            return []
        first = self.identity is None
        self.identity = identity
        self.tasks = {i.id.task_id for i in pplan.instances}
        self.packing_plan_id = pplan.packing_plan_id
        if self.inflight is not None:
            log.info("checkpoint %d abandoned: the plan changed", self.inflight.checkpoint_id)
            self.failed += 1
            self.inflight = None
        failed_at = self.restore.failed_at if self.restore is not None else now
        actions = self._start_restore(now, failed_at, "start" if first else "the plan changed")
        if first:  # what an earlier term started and did not complete
            actions.append(Collect(tuple(r.checkpoint_id for r in self.record.complete)))
        return actions

    def on_report(self, msg: schema.CheckpointMessage, now: float) -> list:
        """A task's SAVED or RESTORED."""
        if msg.step == Step.SAVED:
            c = self.inflight
            if c is None or msg.checkpoint_id != c.checkpoint_id or msg.task_id not in c.waiting:
                return []
            c.waiting.discard(msg.task_id)
            c.bytes += msg.bytes or 0
            c.align_ms = max(c.align_ms, msg.align_ms or 0.0)
            return self._complete(now) if not c.waiting else []
        if msg.step == Step.FAILED:
            c = self.inflight
            if c is None or msg.checkpoint_id != c.checkpoint_id:
                return []
            self.last_failure = f"checkpoint {c.checkpoint_id}: task {msg.task_id}: {msg.error}"
            log.warning("checkpoint %d abandoned: task %s could not save its state: %s", c.checkpoint_id,
                        msg.task_id, msg.error)
            self.failed += 1
            self.inflight = None
            self.next_start = now + self.interval  # a storage that just failed is not asked again at once
            return []
        if msg.step == Step.RESTORED:
            r = self.restore
            if r is None or msg.epoch != r.epoch:
                return []
            r.waiting.discard(msg.task_id)
            if r.waiting:
                return []
            self.restore = None
            self.last_restore_ms = (now - r.failed_at) * 1000
            self.next_start = now + self.interval
            log.info("every task restored checkpoint %d in epoch %d, %.0f ms after the plan that started the "
                     "restore; resuming", r.checkpoint_id, r.epoch, self.last_restore_ms)
            return [Broadcast(schema.CheckpointMessage(step=Step.RESUME, checkpoint_id=r.checkpoint_id,
                                                       epoch=r.epoch))]
        return []

    def on_tick(self, now: float) -> list:
        if self.restore is not None:
            if now - self.restore.started > self.timeout:
                log.warning("restore in epoch %d not done in %.0f s (waiting for tasks %s); again",
                            self.restore.epoch, self.timeout, sorted(self.restore.waiting))
                return self._start_restore(now, self.restore.failed_at, "a restore timed out")
            return []
        if self.identity is None:
            return []
        if self.inflight is not None:
            if now - self.inflight.started > self.timeout:
                log.warning("checkpoint %d abandoned: not complete after %.0f s (waiting for tasks %s)",
                            self.inflight.checkpoint_id, self.timeout, sorted(self.inflight.waiting))
                self.failed += 1
                self.inflight = None
                self.next_start = now
            return []
        if now < self.next_start:
            return []
        cid = self.record.last_id + 1
        self.record = schema.Checkpoints(complete=self.record.complete, last_id=cid, epoch=self.record.epoch)
        self.inflight = _InFlight(cid, now, self.tasks, self.packing_plan_id)
        self.next_start = now + self.interval
        return [Record(self.record, then=(Broadcast(schema.CheckpointMessage(step=Step.START, checkpoint_id=cid,
                                                                           epoch=self.epoch)),))]

    # steps ------------------------------------------------------------------------
    def _complete(self, now: float) -> list:
        c = self.inflight
        self.inflight = None
        self.completed += 1
        done = schema.CheckpointRecord(checkpoint_id=c.checkpoint_id, packing_plan_id=c.packing_plan_id,
                                       time=self.wall(), bytes=c.bytes, duration_ms=(now - c.started) * 1000,
                                       align_ms=c.align_ms)
        complete = [done] + list(self.record.complete)[:self.kept - 1]
        self.record = schema.Checkpoints(complete=complete, last_id=self.record.last_id, epoch=self.record.epoch)
        log.debug("checkpoint %d complete: %d bytes in %.0f ms", c.checkpoint_id, c.bytes, done.duration_ms)
        return [Record(self.record, then=(
            Broadcast(schema.CheckpointMessage(step=Step.DONE, checkpoint_id=c.checkpoint_id, epoch=self.epoch)),
            Collect(tuple(r.checkpoint_id for r in complete))))]

    def _start_restore(self, now: float, failed_at: float, why: str) -> list:
        epoch = self.record.epoch + 1
        self.record = schema.Checkpoints(complete=self.record.complete, last_id=self.record.last_id, epoch=epoch)
        cid = self.latest()
        self.restore = _Restore(epoch, cid, now, self.tasks, failed_at)
        self.restores += 1
        log.info("%s: every task rolls back to %s in epoch %d", why,
                 f"checkpoint {cid}" if cid else "the empty state", epoch)
        return [Record(self.record, then=(
            Broadcast(schema.CheckpointMessage(step=Step.RESTORE, checkpoint_id=cid, epoch=epoch)),))]

    def restoring(self) -> Optional[schema.CheckpointMessage]:
        """The RESTORE under way, for a stream manager that registers in the middle of it (its tasks
        may not have had it)."""
        r = self.restore
        if r is None:
            return None
        return schema.CheckpointMessage(step=Step.RESTORE, checkpoint_id=r.checkpoint_id, epoch=r.epoch)

    def stats(self) -> schema.CheckpointStats:
        return schema.CheckpointStats(interval_secs=self.interval, completed=self.completed, failed=self.failed,
                                      restores=self.restores,
                                      last=self.record.complete[0] if self.record.complete else None,
                                      last_restore_ms=self.last_restore_ms, mode=self.mode,
                                      last_failure=self.last_failure)


def checkpoint_figures(stats: schema.CheckpointStats) -> dict:
    """``CheckpointStats`` as the plain figures of a metrics row (the capacity report reads them)."""
    last = stats.last
    return {"mode": stats.mode, "interval_secs": stats.interval_secs, "completed": stats.completed,
            "failed": stats.failed, "restores": stats.restores, "last_restore_ms": stats.last_restore_ms,
            "last_id": last.checkpoint_id if last else None, "duration_ms": last.duration_ms if last else None,
            "bytes": last.bytes if last else None, "align_ms": last.align_ms if last else None,
            "last_failure": stats.last_failure}


def describe_checkpoints(figures: dict) -> str:
    """One line of ``checkpoint_figures`` for ``squall metrics``."""
    line = (f"checkpoints ({figures['mode']}, every {figures['interval_secs']:g} s): {figures['completed']} complete, "
            f"{figures['failed']} abandoned, {figures['restores']} restores")
    if figures["last_restore_ms"] is not None:
        line += f" (the last took {figures['last_restore_ms']:.0f} ms)"
    if figures["last_id"] is not None:
        line += (f"; last #{figures['last_id']}: {figures['bytes'] / 1024:.1f} KiB in {figures['duration_ms']:.0f} ms, "
                 f"alignment {figures['align_ms']:.1f} ms")
    if figures.get("last_failure"):
        line += f"; last failure: {figures['last_failure']}"
    return line
