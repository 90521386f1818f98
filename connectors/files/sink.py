"""FileSink: tuples to Parquet or JSON Lines part files in a directory (local or HDFS) that Spark reads.

Parts are written under hidden names and made visible by a rename only when committed (the names and
the restore rules: ``connectors/files/parts.py``):

- ATMOST_ONCE: a part is committed when it rolls (``files.roll.size.mb``, ``files.roll.interval.secs``).
- ATLEAST_ONCE: the same, and a tuple is acked only after the part holding it was renamed
  (``auto_ack = False``), so a crash before the commit replays it.
- EFFECTIVELY_ONCE: a rolled part stays in progress; at ``pre_save(c)`` every part is closed and renamed
  pending for ``c``, recorded in the state of ``c``; at ``post_save(c)`` (``c`` complete) pending parts up
  to ``c`` are renamed to their final names. A restore to ``C`` finishes the parts pending in the state
  of ``C`` and deletes this task's parts in progress and those pending for checkpoints above ``C``.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Mapping, Optional, Sequence

from squall.component import TICK_FREQ_KEY, TopologyContext, Tuple
from squall.metrics import CountMetric
from squall.stateful import KeyValueState, StatefulBolt

from squall.connectors.files import keys as K
from squall.connectors.files.formats import EXTENSIONS, PartWriter, part_writer
from squall.connectors.files.fs import FileStore
from squall.connectors.files.parts import (
    RollPolicy, final_name, in_progress_path, is_marker, marker_keys, owned_markers, partition_folder,
    pending_path, new_token, restore_plan,
)

log = logging.getLogger(__name__)

MODE = "topology.reliability.mode"
ROLL_CHECK_EVERY = 256  # tuples between two roll checks of a part


@dataclass
class OpenPart:
    final: str
    writer: PartWriter
    opened_at: float
    held: list = field(default_factory=list)  # tuples acked once the part is committed (ATLEAST_ONCE)


class FileSink(StatefulBolt):
    """Writes every tuple it gets as a row of a part file under ``files.path`` (docs/connectors.md)."""

    outputs = ()
    auto_ack = False  # ATLEAST_ONCE: acked once the part holding the tuple is committed
    tick_secs = 1.0  # a part rolls on time (files.roll.interval.secs) when no tuple comes

    # checks ----------------------------------------------------------------------------------------
    @classmethod
    def check_config(cls, config: Mapping[str, object]) -> None:
        K.check_keys(config)
        K.check_path(config)  # it may come with --config-property: preflight requires it
        K.file_format(config, K.SINK_FORMATS)
        K.field_list(config, K.PARTITION_BY)
        K.positive(config, K.ROLL_SIZE)
        interval = K.positive(config, K.ROLL_INTERVAL)
        mode = config.get(MODE)
        if mode == "ATLEAST_ONCE":
            timeout = float(config.get("topology.message.timeout.secs") or 30)
            checkpoint = float(config.get("topology.state.checkpoint.interval.secs") or 1)
            tick = float(config.get(TICK_FREQ_KEY) or cls.tick_secs)
            if interval + tick + checkpoint >= timeout:
                raise ValueError(f"{K.ROLL_INTERVAL} {interval:g} + {TICK_FREQ_KEY} {tick:g} + "
                                 f"topology.state.checkpoint.interval.secs {checkpoint:g} must stay below "
                                 f"topology.message.timeout.secs {timeout:g}: at ATLEAST_ONCE a tuple is acked after "
                                 "its part is committed, so it would time out and be replayed for ever")

    @classmethod
    def preflight(cls, config: Mapping[str, object]) -> None:
        FileStore.open(K.path(config)).check_writable()

    # life ------------------------------------------------------------------------------------------
    def initialize(self, config: Mapping[str, object], context: TopologyContext) -> None:
        self.context = context
        self.store = FileStore.open(K.path(config))
        self.format = K.file_format(config, K.SINK_FORMATS)
        self.ext = EXTENSIONS[self.format]
        self.partition_by = K.field_list(config, K.PARTITION_BY)
        self.policy = RollPolicy(K.positive(config, K.ROLL_SIZE) * 1e6, K.positive(config, K.ROLL_INTERVAL))
        self.mode = config.get(MODE) or "ATMOST_ONCE"
        self.groups = int(config.get("squall.state.key.groups") or 128)
        self.markers = marker_keys(self.groups)
        self.clock = time.monotonic
        self.open: dict = {}  # (folder, fields) -> OpenPart
        self.closed: list = []  # EFFECTIVELY_ONCE: finals of parts rolled, still in progress, until pre_save
        self.layouts: dict = {}  # fields -> (partition value indexes, row indexes, row fields)
        self.token, self.seq = new_token(), 0
        self.state: Optional[KeyValueState] = None
        self.restored, self.cleanup_due = 0, False
        self.rows_written = context.register_metric("files_rows_written", CountMetric())
        self.bytes_written = context.register_metric("files_bytes_written", CountMetric())
        self.parts_committed = context.register_metric("files_parts_committed", CountMetric())

    def _index(self) -> tuple:
        tasks = self.context.get_component_tasks(self.context.get_component_id())
        me = self.context.get_task_id()
        return (tasks.index(me) if me in tasks else 0), len(tasks)

    def init_state(self, state: KeyValueState) -> None:
        """Start, or roll back, from a complete checkpoint's state. The cleanup (finish its pending parts,
        delete garbage) waits for the first tuple, tick or checkpoint step: a new process gets a provisional
        empty state first (before the topology master's RESTORE names the checkpoint), and cleaning up
        after that one would delete the parts pending in the real one."""
        if self.mode == "ATMOST_ONCE":
            self._roll_all()  # what this process wrote is kept (at most once: never replayed)
        else:
            self._discard_open()  # replayed: the rollback undid it
        self.state = state
        self.restored = max((v for k, v in state.items() if is_marker(k)), default=0)
        for k in [k for k in state.keys() if is_marker(k)]:
            state.delete(k)
        self.cleanup_due = True
        self.token, self.seq = new_token(), 0

    def _cleanup(self) -> None:
        """After a restore to checkpoint C, before this task writes: finish the parts pending in C's state,
        delete this task's (and the tasks it replaces') parts in progress and pending above C. By then every
        task has restored (tuples flow after RESUME), and no live task writes files another one deletes."""
        self.cleanup_due = False
        state = self.state
        pending = {k: v for k, v in state.items() if isinstance(k, str)}
        index, parallelism = self._index()
        hidden = [e.path for e in self.store.walk() if e.path.rpartition("/")[2].startswith(".part-")]
        plan = restore_plan(pending, self.restored, hidden, index, parallelism)
        finished = 0
        for src, final in plan.finish:
            finished += self.store.rename(src, final)  # False: post_save had renamed it
            state.delete(final)
        self.parts_committed.incr(finished)
        for path in plan.delete:
            self.store.delete(path)
        log.info("file sink task %d of %d restored checkpoint %d: %d pending parts finished (%d already were), "
                 "%d deleted", index, parallelism, self.restored, finished, len(plan.finish) - finished,
                 len(plan.delete))

    def close(self) -> None:
        if getattr(self, "mode", "EFFECTIVELY_ONCE") != "EFFECTIVELY_ONCE":
            self._roll_all()

    # tuples ----------------------------------------------------------------------------------------
    def _layout(self, fields: tuple) -> tuple:
        layout = self.layouts.get(fields)
        if layout is None:
            missing = [f for f in self.partition_by if f not in fields]
            if missing:
                raise ValueError(f"{K.PARTITION_BY}: the tuples have no field {missing[0]!r} (fields: {list(fields)})")
            keys = [fields.index(f) for f in self.partition_by]
            rows = [i for i, f in enumerate(fields) if f not in self.partition_by]
            layout = self.layouts[fields] = (keys, rows, [fields[i] for i in rows])
        return layout

    def process(self, tup: Tuple) -> None:
        if self.cleanup_due:
            self._cleanup()
        values = tup.values
        if self.partition_by:
            keys, rows, row_fields = self._layout(tup.fields)
            folder = partition_folder(self.partition_by, [values[i] for i in keys])
            values = [values[i] for i in rows]
        else:
            folder, row_fields = "", tup.fields
        key = (folder, tup.fields)
        part = self.open.get(key)
        if part is None:
            part = self._open_part(key, row_fields)
        part.writer.add(values)
        if self.mode == "ATLEAST_ONCE":
            part.held.append(tup)
        if part.writer.rows % ROLL_CHECK_EVERY == 0 and self.policy.due(part.writer.size(), part.opened_at,
                                                                        self.clock()):
            self._roll(key)

    def process_tick(self, tup: Tuple) -> None:
        if self.cleanup_due:
            return  # nothing is open; a tick may come before the RESTORE that names the real state
        now = self.clock()
        for key in [k for k, p in self.open.items() if self.policy.due(p.writer.size(), p.opened_at, now)]:
            self._roll(key)

    def _open_part(self, key: tuple, row_fields: Sequence[str]) -> OpenPart:
        index, _ = self._index()
        name = final_name(index, self.token, self.seq, self.ext)
        self.seq += 1
        final = f"{key[0]}/{name}" if key[0] else name
        stream = self.store.open_output(in_progress_path(final))
        part = self.open[key] = OpenPart(final, part_writer(self.format, stream, row_fields), self.clock())
        return part

    def _roll(self, key: tuple) -> None:
        """Close the part; commit it now (ATMOST_ONCE, ATLEAST_ONCE: rename, then ack its tuples) or at the
        next checkpoint (EFFECTIVELY_ONCE)."""
        part = self.open.pop(key)
        self.bytes_written.incr(part.writer.close())
        self.rows_written.incr(part.writer.rows)
        if self.mode == "EFFECTIVELY_ONCE":
            self.closed.append(part.final)
            return
        self.store.rename(in_progress_path(part.final), part.final)
        self.parts_committed.incr()
        for tup in part.held:
            self.ack(tup)

    def _roll_all(self) -> None:
        for key in list(getattr(self, "open", {})):
            self._roll(key)

    def _discard_open(self) -> None:
        for part in self.open.values():
            try:
                part.writer.close()
            except Exception:  # a half-written part is deleted just after: its content does not matter
                log.warning("file sink: closing %s to discard it failed", part.final, exc_info=True)
        self.open.clear()
        self.closed.clear()  # init_state's cleanup deletes their files

    # checkpoints -----------------------------------------------------------------------------------
    def pre_save(self, checkpoint_id: int) -> None:
        if self.cleanup_due:
            self._cleanup()
        state = self.state
        if self.mode == "EFFECTIVELY_ONCE":
            for key in list(self.open):
                self._roll(key)
            for final in self.closed:
                pending = pending_path(final, checkpoint_id)
                self.store.rename(in_progress_path(final), pending)
                state.put(final, [checkpoint_id, pending])
            self.closed = []
        index, parallelism = self._index()
        for marker in owned_markers(self.markers, index, parallelism, self.groups):
            state.put(marker, checkpoint_id)

    def post_save(self, checkpoint_id: int) -> None:
        if self.cleanup_due:
            self._cleanup()
        for final, entry in list(self.state.items()):
            if isinstance(final, str) and entry[0] <= checkpoint_id:
                self.parts_committed.incr(self.store.rename(entry[1], final))
                self.state.delete(final)

