"""FileSpout: records of the files that appear in a directory (local or HDFS), each file read by one task.

A file is owned by the task ``stable_hash(path) % parallelism``; its position (next record, byte or row
position, whether it is done) is the task's state under the file's path, so a rollback rewinds it and a
parallelism change hands whole files to their new owners (``rescalable``: each task gets every task's
saved positions and keeps those of the files it now owns). Hidden names (a part of the path starting
with ``.`` or ``_``: files being written) are ignored; a visible file must be complete (written under a
hidden name, then renamed) and is not read again once done.

- EFFECTIVELY_ONCE: records are emitted without ids; the position in the state moves as they are
  emitted and is saved with every checkpoint; a rollback resumes from it.
- ATLEAST_ONCE: a record is emitted with the id ``(file, offset)``; a failed one is emitted again; the
  state holds the position after the records acked without a gap (a restart resumes there).
- ATMOST_ONCE: as EFFECTIVELY_ONCE, without the guarantee downstream.

Streams: ``default`` (``file``, ``offset``, ``record``: a ``str`` line for text, a dict for jsonl, csv
and Parquet; a subclass that sets ``fields`` emits those fields of the record instead) and ``errors``
(``file``, ``offset``, ``reason``) for a record that cannot be decoded.
"""
from __future__ import annotations

import logging
import time
from collections import deque
from typing import Mapping, Optional, Sequence

from squall.component import TopologyContext
from squall.metrics import CountMetric
from squall.stateful import KeyValueState, StatefulSpout
from squall.stream import Stream

from squall.connectors.files import keys as K
from squall.connectors.files.formats import RecordReader, record_reader
from squall.connectors.files.fs import FileStore, is_hidden
from squall.connectors.files.positions import AckTracker, owner

log = logging.getLogger(__name__)

ERRORS = "errors"


class FileSpout(StatefulSpout):
    """Emits the records of the files under ``files.path`` (docs/connectors.md)."""

    rescalable = True
    #: field names to emit from each record instead of ``record`` (None: the record whole)
    fields: Optional[Sequence[str]] = None
    outputs = [Stream(["file", "offset", "record"]), Stream(["file", "offset", "reason"], name=ERRORS)]

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if cls.fields is not None and "outputs" not in cls.__dict__:
            cls.outputs = [Stream(["file", "offset", *cls.fields]),
                           Stream(["file", "offset", "reason"], name=ERRORS)]

    # checks ----------------------------------------------------------------------------------------
    @classmethod
    def check_config(cls, config: Mapping[str, object]) -> None:
        K.check_keys(config)
        K.check_path(config)  # it may come with --config-property: preflight requires it
        fmt = K.file_format(config, K.SPOUT_FORMATS)
        K.positive(config, K.DISCOVER_INTERVAL)
        batch = K.positive(config, K.READ_BATCH)
        if batch != int(batch):
            raise ValueError(f"{K.READ_BATCH} must be a whole number, got {config.get(K.READ_BATCH)!r}")
        if cls.fields is not None and fmt == "text":
            raise ValueError(f"{K.FORMAT} is text, whose record is a line: {cls.__name__}.fields needs jsonl, csv "
                             "or parquet")

    @classmethod
    def preflight(cls, config: Mapping[str, object]) -> None:
        store = FileStore.open(K.path(config))
        if not store.is_dir():
            raise ValueError(f"{K.PATH} {store.uri}: no such directory")

    # life ------------------------------------------------------------------------------------------
    def initialize(self, config: Mapping[str, object], context: TopologyContext) -> None:
        self.context = context
        self.store = FileStore.open(K.path(config))
        self.format = K.file_format(config, K.SPOUT_FORMATS)
        self.discover_every = K.positive(config, K.DISCOVER_INTERVAL)
        self.batch = int(K.positive(config, K.READ_BATCH))
        self.mode = config.get("topology.reliability.mode") or "ATMOST_ONCE"
        self.acking = self.mode == "ATLEAST_ONCE"
        self.clock = time.monotonic
        self.state: Optional[KeyValueState] = None
        self.records_read = context.register_metric("files_records_read", CountMetric())
        self.decode_errors = context.register_metric("files_decode_errors", CountMetric())
        self.files_finished = context.register_metric("files_files_finished", CountMetric())
        self._reset()

    def _reset(self) -> None:
        self.reader: Optional[RecordReader] = None
        self.current: Optional[str] = None
        self.queue: deque = deque()
        self.queued: set = set()
        self.trackers: dict = {}  # file -> AckTracker (ATLEAST_ONCE)
        self.inflight: dict = {}  # (file, offset) -> values (ATLEAST_ONCE)
        self.failed: deque = deque()
        self.next_discover = 0.0

    def _index(self) -> tuple:
        tasks = self.context.get_component_tasks(self.context.get_component_id())
        me = self.context.get_task_id()
        return (tasks.index(me) if me in tasks else 0), len(tasks)

    def init_state(self, state: KeyValueState) -> None:
        """Positions of a complete checkpoint (after a parallelism change, every task's): keep this task's files."""
        if getattr(self, "reader", None) is not None:
            self.reader.close()
        self._reset()
        self.state = state
        index, parallelism = self._index()
        for path in state.keys():
            if owner(path, parallelism) != index:
                state.delete(path)

    def close(self) -> None:
        if self.reader is not None:
            self.reader.close()
            self.reader = None

    # reading ---------------------------------------------------------------------------------------
    def _discover(self) -> None:
        """Queue the visible files this task owns and has not finished; forget finished files that are gone
        (the state stays the size of the directory)."""
        index, parallelism = self._index()
        listed = sorted(self.store.walk())
        present = {entry.path for entry in listed}
        for path, saved in self.state.items():
            if saved[2] and path not in present:
                self.state.delete(path)
        for entry in listed:
            path = entry.path
            if (path in self.queued or path == self.current or path in self.trackers or is_hidden(path)
                    or owner(path, parallelism) != index):  # a tracked file is read, waiting for acks
                continue
            saved = self.state.get(path)
            if saved is None or not saved[2]:
                self.queue.append(path)
                self.queued.add(path)

    def _open_next(self) -> bool:
        while self.queue:
            path = self.queue.popleft()
            self.queued.discard(path)
            offset, position, done = self.state.get(path, (0, 0, False))
            if done:
                continue
            try:
                self.reader = record_reader(self.format, self.store.open_input(path), offset, position)
            except (OSError, ValueError) as e:  # gone, or not a file of this format
                log.warning("file spout: cannot read %s: %s", path, e)
                self.emit([path, offset, f"cannot read the file: {e}"], stream=ERRORS)
                self.state.put(path, [offset, position, True])
                continue
            self.current = path
            if self.acking:
                self.trackers[path] = AckTracker(offset, position)
            return True
        return False

    def next_tuple(self) -> None:
        if self.failed:
            self._replay()
            return
        now = self.clock()
        if now >= self.next_discover:
            self._discover()
            self.next_discover = now + self.discover_every
        if self.reader is None and not self._open_next():
            return
        path, reader = self.current, self.reader
        records = reader.read(self.batch)
        fields = self.fields
        good, ids, bad = [], [], []
        tracker = self.trackers.get(path)
        for r in records:
            if r.error is not None:
                bad.append([path, r.offset, r.error])
                if tracker is not None:
                    tracker.emitted(r.offset, r.end)
                    tracker.ack(r.offset)
                continue
            if fields is None:
                values = [path, r.offset, r.record]
            else:
                get = r.record.get
                values = [path, r.offset, *[get(f) for f in fields]]
            good.append(values)
            if tracker is not None:
                tup_id = (path, r.offset)
                ids.append(tup_id)
                self.inflight[tup_id] = values
                tracker.emitted(r.offset, r.end)
        if good:
            self.emit_many(good, ids if tracker is not None else None)
        if bad:
            self.emit_many(bad, stream=ERRORS)
            self.decode_errors.incr(len(bad))
        self.records_read.incr(len(records))
        if reader.done:
            self.files_finished.incr()
            reader.close()
            self.reader = self.current = None
        if tracker is None:
            self.state.put(path, [reader.offset, reader.position, reader.done])
        else:
            tracker.eof = reader.done
            self._save_tracker(path, tracker)

    def _save_tracker(self, path: str, tracker: AckTracker) -> None:
        offset, position = tracker.committed
        self.state.put(path, [offset, position, tracker.done])
        if tracker.done:
            del self.trackers[path]

    def _replay(self) -> None:
        ids, values = [], []
        while self.failed and len(ids) < self.batch:
            tup_id = self.failed.popleft()
            if tup_id in self.inflight:
                ids.append(tup_id)
                values.append(self.inflight[tup_id])
        if ids:
            self.emit_many(values, ids)

    # ATLEAST_ONCE ----------------------------------------------------------------------------------
    def ack(self, tup_id: object) -> None:
        if self.inflight.pop(tup_id, None) is None:
            return  # of a run before the last rollback
        path, offset = tup_id
        tracker = self.trackers.get(path)
        if tracker is not None and tracker.ack(offset):
            self._save_tracker(path, tracker)

    def fail(self, tup_id: object) -> None:
        if tup_id in self.inflight:
            self.failed.append(tup_id)
