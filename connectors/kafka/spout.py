"""``KafkaSpout``: records of Kafka topics as tuples, in every delivery mode (docs/connectors.md).

The spout's tasks split the partitions by task index (``assign.py``; ``consumer.assign()``, no group
rebalancing) and its state is its position: ``(topic, partition) -> offset`` to read next. It is a
rescalable ``StatefulSpout``: after a parallelism change each task gets every task's saved positions and
keeps those of the partitions it now reads.

Per ``topology.reliability.mode``:

- ``EFFECTIVELY_ONCE``: no tuple ids. ``pre_save`` puts the positions in the state; ``init_state`` (the
  start and every rollback) seeks each owned partition to its saved offset; ``post_save`` commits that
  checkpoint's positions to the group (asynchronously: lag tools see them, nothing reads them back).
- ``ATLEAST_ONCE``: ids ``(topic, partition, offset)``; ``offsets.py`` keeps per partition the records
  open, retries failed ones with backoff and gives the *committable* offset (past acked records only),
  which is what the state saves and what is committed to the group every ``kafka.commit.interval.secs``.
  A rollback re-reads from the checkpoint's committable offsets.
- ``ATMOST_ONCE``: no ids; a batch's positions are committed to the group (synchronously) *before* its
  tuples are emitted, as Storm's at-most-once spout, and a restarted task starts from the group's offsets:
  a record is never emitted twice; one emitted and lost in a crash is not emitted again.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Dict, List, Mapping, Optional, Tuple

from squall.component import TopologyContext
from squall.connectors.kafka import common
from squall.connectors.kafka.assign import assign_partitions, task_index
from squall.connectors.kafka.offsets import Backoff, PartitionOffsets
from squall.connectors.kafka.records import FORMATS, decoder, key_decoder, reason
from squall.metrics import SOURCE_PARTITIONS, CountMetric, MultiCountMetric, SourcePartitions
from squall.stateful import KeyValueState, StatefulSpout
from squall.stream import Stream

if TYPE_CHECKING:  # an extra (squall[kafka]): imported where a consumer is made
    import confluent_kafka

log = logging.getLogger(__name__)

FIELDS = ("key", "value", "topic", "partition", "offset", "timestamp")
ERRORS = "errors"
ERROR_FIELDS = ("topic", "partition", "offset", "reason")
STARTS = ("earliest", "latest", "committed")
POLL_SECS = 0.005  # a consume() waits at most this long: next_tuple never blocks past a flush interval
METADATA_SECS = 5.0  # a metadata or offsets request of init_state waits at most this long
DISCOVER_SECS = 0.5  # one made from next_tuple (a look for new partitions) at most this long
RETRY_ASSIGN = Backoff(first=1.0, factor=2.0, longest=30.0)  # no broker to say what to read: ask again
ERROR_LOG_SECS = 30.0  # one log line per client error kind in this long

TP = Tuple[str, int]


@dataclass(frozen=True)
class Settings:
    """The spout's ``kafka.*`` keys, checked (``ValueError`` names the key)."""

    topics: Tuple[str, ...]
    start: str = "committed"
    value_format: str = "utf-8"
    group_id: Optional[str] = None
    discover_secs: float = 30.0
    commit_secs: float = 5.0
    max_uncommitted: int = 5000
    batch_size: int = 500
    retry: Backoff = Backoff()

    @classmethod
    def from_config(cls, config: Mapping[str, object]) -> "Settings":
        common.check_keys(config)
        common.required(config, common.BOOTSTRAP)
        raw = common.required(config, "kafka.topics")
        topics = tuple(t.strip() for t in raw.split(","))
        if not all(topics):
            raise ValueError(f"kafka.topics is {raw!r}: an empty topic name in the list")
        start = str(config.get("kafka.start") or "committed")
        if start not in STARTS:
            raise ValueError(f"kafka.start is {start!r}: expected one of {', '.join(STARTS)}")
        fmt = str(config.get("kafka.value.format") or "utf-8")
        if fmt not in FORMATS:
            raise ValueError(f"kafka.value.format is {fmt!r}: expected one of {', '.join(FORMATS)}")
        first = _positive(config, "kafka.retry.initial.secs", 0.5)
        return cls(topics=topics, start=start, value_format=fmt, group_id=config.get("kafka.group.id") or None,
                   discover_secs=_positive(config, "kafka.discover.interval.secs", 30.0),
                   commit_secs=_positive(config, "kafka.commit.interval.secs", 5.0),
                   max_uncommitted=int(_positive(config, "kafka.max.uncommitted.per.partition", 5000)),
                   batch_size=int(_positive(config, "kafka.batch.size", 500)),
                   retry=Backoff(first, 2.0, max(first, _positive(config, "kafka.retry.max.secs", 30.0))))


def _positive(config: Mapping[str, object], key: str, default: float) -> float:
    value = config.get(key)
    if value is None:
        return default
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{key} is {value!r}: expected a number") from None
    if not number > 0:
        raise ValueError(f"{key} is {value!r}: expected a number above 0")
    return number


class KafkaSpout(StatefulSpout):
    """Reads ``kafka.topics`` from ``kafka.bootstrap.servers``; emits ``key, value, topic, partition, offset,
    timestamp`` (ms) on the default stream and records it cannot decode on ``errors``."""

    rescalable = True
    outputs = [Stream(list(FIELDS)), Stream(list(ERROR_FIELDS), ERRORS)]

    # checks ---------------------------------------------------------------------------
    @classmethod
    def check_config(cls, config: Mapping[str, object]) -> None:
        Settings.from_config(config)

    @classmethod
    def preflight(cls, config: Mapping[str, object]) -> None:
        common.check_cluster(config, Settings.from_config(config).topics)

    # life -----------------------------------------------------------------------------
    def initialize(self, config: Mapping[str, object], context: TopologyContext) -> None:
        from confluent_kafka import Consumer

        self.settings = Settings.from_config(config)
        self.mode = config.get("topology.reliability.mode", "ATMOST_ONCE")
        self.context = context
        self.decode = decoder(self.settings.value_format)
        self.decode_key = key_decoder(self.settings.value_format)
        group = self.settings.group_id or f"squall.{context.topology_name}.{context.get_component_id()}"
        client = {**common.client_config(config, "consumer"), "group.id": group, "enable.auto.commit": False,
                  "enable.auto.offset.store": False, "error_cb": self._on_error}
        self.consumer = Consumer({**client, "on_commit": self._on_commit})
        # metadata, watermarks and group offsets are asked on a client that never fetches: a broker answers a
        # connection's requests in order, and the reader's long-poll fetches (fetch.wait.max.ms) would go first
        self.lookup = Consumer(client)
        self.state = KeyValueState()
        self.positions: Dict[TP, int] = {}  # partitions read -> next offset to read
        self.open: Dict[TP, PartitionOffsets] = {}  # ATLEAST_ONCE: records open per partition
        self.full: set = set()  # ATLEAST_ONCE: paused, kafka.max.uncommitted.per.partition open
        self.known: Optional[List[TP]] = None  # every partition of the topics, at the last look
        self.backpressure = False
        self.saved: Dict[int, Dict[TP, int]] = {}  # EFFECTIVELY_ONCE: checkpoint -> positions saved
        self.committed: Dict[TP, int] = {}  # what was last committed to the group
        now = time.monotonic()
        self.next_discover = now + self.settings.discover_secs
        self.next_commit = now + self.settings.commit_secs
        self.error_logged: Dict[str, float] = {}
        self.assign_failures = 0
        # lag, records/s and bytes/s per partition: squall metrics, the UI and the capacity report show them
        self.partitions = context.register_metric(SOURCE_PARTITIONS, SourcePartitions(self.lag))
        self.bad_records = context.register_metric("kafka_bad_records", CountMetric())
        self.dropped = context.register_metric("kafka_records_dropped", CountMetric())
        self.client_errors = context.register_metric("kafka_client_errors", MultiCountMetric())

    def close(self) -> None:
        for name in ("consumer", "lookup"):
            client = getattr(self, name, None)
            if client is not None:
                setattr(self, name, None)
                client.close()

    # state ----------------------------------------------------------------------------
    def init_state(self, state: KeyValueState) -> None:
        """The start and every rollback: read the owned partitions from the saved positions."""
        self.state = state
        keep = dict(self.positions) if self.mode == "ATMOST_ONCE" else {}  # a rollback re-emits nothing
        self.consumer.unassign()
        self.positions, self.open, self.full, self.saved, self.known = {}, {}, set(), {}, None
        self._assign(keep, initial=True, timeout=METADATA_SECS)

    def pre_save(self, checkpoint_id: int) -> None:
        if self.known is None:
            return  # nothing assigned yet: the restored positions stay as they are
        if self.mode == "ATLEAST_ONCE":
            saved = {tp: part.committable for tp, part in self.open.items()}
        else:
            saved = dict(self.positions)
        for tp, offset in saved.items():
            self.state.put(tp, offset)
        if self.mode == "EFFECTIVELY_ONCE":
            self.saved[checkpoint_id] = saved

    def post_save(self, checkpoint_id: int) -> None:
        saved = self.saved.pop(checkpoint_id, None)
        for older in [c for c in self.saved if c < checkpoint_id]:
            del self.saved[older]
        if saved:
            self._commit(saved, asynchronous=True)

    # reading --------------------------------------------------------------------------
    def next_tuple(self) -> None:
        now = time.monotonic()
        if now >= self.next_discover:
            self._discover(now)
        if self.mode == "ATLEAST_ONCE":
            self._retry(now)
            if now >= self.next_commit:
                self.next_commit = now + self.settings.commit_secs
                self._commit({tp: part.committable for tp, part in self.open.items()}, asynchronous=True)
        messages = self.consumer.consume(self.settings.batch_size, POLL_SECS)
        if messages:
            self._emit(messages)

    def _emit(self, messages: list) -> None:
        rows, ids, errors = [], [], []
        positions = self.positions
        read: Dict[TP, list] = {}  # records and bytes read per partition, added to the metric once a batch
        decode, decode_key = self.decode, self.decode_key
        reliable = self.mode == "ATLEAST_ONCE"
        for m in messages:
            if m.error() is not None:
                self._on_error(m.error())
                continue
            topic, partition, offset = m.topic(), m.partition(), m.offset()
            tp = (topic, partition)
            at = positions.get(tp)
            if at is None or offset < at:
                continue  # a partition no longer read, or fetched before a seek
            positions[tp] = offset + 1
            raw, raw_key = m.value(), m.key()
            counts = read.get(tp)
            if counts is None:
                counts = read[tp] = [0, 0]
            counts[0] += 1
            counts[1] += len(raw or b"") + len(raw_key or b"")
            try:
                key = None if raw_key is None else decode_key(raw_key)
            except ValueError as e:
                errors.append([topic, partition, offset, reason(e, "key")])
                continue
            try:
                value = None if raw is None else decode(raw)
            except ValueError as e:  # UnicodeDecodeError and json's errors are ValueErrors
                errors.append([topic, partition, offset, reason(e, "value")])
                continue
            kind, ts = m.timestamp()
            row = [key, value, topic, partition, offset, ts if kind else None]
            rows.append(row)
            if reliable:
                self.open[tp].emitted(offset, row)
                ids.append((topic, partition, offset))
        for (topic, partition), (records, nbytes) in read.items():
            self.partitions.read(f"{topic}-{partition}", records, nbytes)
        if reliable:
            for topic, partition, offset, _ in errors:
                self.open[(topic, partition)].skipped(offset)
        elif self.mode == "ATMOST_ONCE":
            touched = {(m.topic(), m.partition()) for m in messages}
            if not self._commit({tp: positions[tp] for tp in touched if tp in positions}, asynchronous=False):
                log.warning("%d records not emitted: their offsets could not be committed first (at most once)",
                            len(rows))
                self.dropped.incr(len(rows) + len(errors))
                return
        if errors:
            self.bad_records.incr(len(errors))
            self.emit_many(errors, stream=ERRORS)
        if rows:
            self.emit_many(rows, ids or None)
        if reliable:
            self._pause_full()

    # at least once ----------------------------------------------------------------------
    def ack(self, tup_id: object) -> None:
        topic, partition, offset = tup_id
        tp = (topic, partition)
        part = self.open.get(tp)
        if part is not None and part.ack(offset) and tp in self.full and len(part) < self.settings.max_uncommitted:
            self.full.discard(tp)
            if not self.backpressure:
                self.consumer.resume([_tp(tp)])

    def fail(self, tup_id: object) -> None:
        topic, partition, offset = tup_id
        part = self.open.get((topic, partition))
        if part is not None:
            part.fail(offset, time.monotonic())

    def _retry(self, now: float) -> None:
        for (topic, partition), part in self.open.items():
            if part.retries:
                due = part.due(now)
                if due:
                    self.emit_many([values for _, values in due], [(topic, partition, o) for o, _ in due])

    def _pause_full(self) -> None:
        full = [tp for tp, part in self.open.items()
                if tp not in self.full and len(part) >= self.settings.max_uncommitted]
        if full:
            self.full.update(full)
            self.consumer.pause([_tp(tp) for tp in full])

    # backpressure -----------------------------------------------------------------------
    def on_backpressure(self, on: bool) -> None:
        self.backpressure = on
        if on:
            self.consumer.pause([_tp(tp) for tp in self.positions])
        else:
            self.consumer.resume([_tp(tp) for tp in self.positions if tp not in self.full])

    # partitions -------------------------------------------------------------------------
    def _assign(self, keep: Dict[TP, int], initial: bool, timeout: float) -> None:
        """Read the partitions this task owns that it does not read yet. ``initial`` (after
        ``init_state``): from the saved position, else ``kafka.start``; a partition found later (the topic
        grew): from its earliest offset."""
        from confluent_kafka import KafkaException

        try:
            known = self._partitions(timeout)
            index, parallelism = task_index(self.context.get_task_id(),
                                            self.context.get_component_tasks(self.context.get_component_id()))
            owned = [tp for tp in assign_partitions(known, index, parallelism) if tp not in self.positions]
            if initial and self.known is None:
                for key in list(self.state.keys()):  # union state after a rescale: keep the partitions read
                    if key not in owned:
                        self.state.delete(key)
            starts = self._starts(owned, keep, initial or self.known is None, timeout)
        except KafkaException as e:
            self.assign_failures += 1
            wait = RETRY_ASSIGN.delay(self.assign_failures)
            self._on_error(e.args[0])
            self._log_once("assign", "Kafka partitions not assigned (%s); asking again in %g s", e.args[0], wait)
            self.next_discover = time.monotonic() + wait
            return
        self.known, self.assign_failures = known, 0
        if not starts:
            return
        for tp, offset in starts.items():
            self.positions[tp] = offset
            if self.mode == "ATLEAST_ONCE":
                self.open[tp] = PartitionOffsets(offset, self.settings.retry)
            if self.mode == "EFFECTIVELY_ONCE":
                self.state.put(tp, offset)  # a checkpoint before the first record saves a real offset
        self.consumer.incremental_assign([_tp(tp, offset) for tp, offset in sorted(starts.items())])
        # librdkafka keeps a partition's pause across unassign and assign (a rollback re-assigns what a
        # full partition or backpressure had paused): set it afresh
        (self.consumer.pause if self.backpressure else self.consumer.resume)([_tp(tp) for tp in starts])
        log.info("task %d reads %s", self.context.get_task_id(),
                 ", ".join(f"{t}-{p}@{o}" for (t, p), o in sorted(starts.items())))

    def _discover(self, now: float) -> None:
        self.next_discover = now + self.settings.discover_secs
        self._assign({}, initial=self.known is None, timeout=DISCOVER_SECS)

    def _partitions(self, timeout: float) -> List[TP]:
        """Every (topic, partition) of the topics, sorted; a topic that does not exist has none (logged)."""
        out = []
        for topic in self.settings.topics:
            meta = self.lookup.list_topics(topic, timeout=timeout).topics.get(topic)
            if meta is None or meta.error is not None:
                self._log_once(f"topic {topic}", "Kafka topic %r is not available: %s", topic,
                               meta.error if meta is not None else "no metadata")
                continue
            out += [(topic, p) for p in meta.partitions]
        return sorted(out)

    def _starts(self, owned: List[TP], keep: Dict[TP, int], initial: bool, timeout: float) -> Dict[TP, int]:
        """The offset each newly owned partition starts at (``KafkaException`` when the broker does not say)."""
        from confluent_kafka import TopicPartition

        starts: Dict[TP, int] = {}
        group: Dict[TP, int] = {}
        if owned and (self.mode == "ATMOST_ONCE" or (initial and self.settings.start == "committed")):
            for tp in self.lookup.committed([_tp(tp) for tp in owned], timeout=timeout):
                if tp.error is None and tp.offset >= 0:
                    group[(tp.topic, tp.partition)] = tp.offset
        for tp in owned:
            saved = self.state.get(tp) if initial else None
            if tp in keep:
                starts[tp] = keep[tp]
            elif self.mode == "ATMOST_ONCE" and tp in group:
                starts[tp] = max(group[tp], saved or 0)
            elif saved is not None:
                starts[tp] = saved
            elif initial and self.settings.start == "committed" and tp in group:
                starts[tp] = group[tp]
            else:
                low, high = self.lookup.get_watermark_offsets(TopicPartition(*tp), timeout=timeout)
                starts[tp] = high if initial and self.settings.start == "latest" else low
        return starts

    # group offsets, errors, lag ---------------------------------------------------------
    def _commit(self, offsets: Dict[TP, int], asynchronous: bool) -> bool:
        """Commit ``offsets`` to the group (those that changed); False if a synchronous commit failed."""
        from confluent_kafka import KafkaException

        changed = {tp: o for tp, o in offsets.items() if self.committed.get(tp) != o}
        if not changed:
            return True
        try:
            self.consumer.commit(offsets=[_tp(tp, o) for tp, o in sorted(changed.items())], asynchronous=asynchronous)
        except KafkaException as e:
            self._on_error(e.args[0])
            return False
        self.committed.update(changed)
        return True

    def _on_commit(self, error: Optional["confluent_kafka.KafkaError"], partitions: list) -> None:
        """An asynchronous commit's answer (from ``consume``, on this thread). A partition whose commit
        failed is forgotten as committed, so the next interval sends it again even if no ack moved it."""
        failed = [tp for tp in partitions if error is not None or tp.error is not None]
        for tp in failed:
            if self.committed.get((tp.topic, tp.partition)) == tp.offset:
                del self.committed[(tp.topic, tp.partition)]
        if error is not None:
            self._on_error(error)
        elif failed:
            self._on_error(failed[0].error)

    def _on_error(self, error: "confluent_kafka.KafkaError") -> None:
        """librdkafka's errors (it reconnects by itself): counted, logged once per kind in a while."""
        from confluent_kafka import KafkaError

        code = error.code() if hasattr(error, "code") else None
        if code == KafkaError._PARTITION_EOF:
            return
        name = error.name() if hasattr(error, "name") else type(error).__name__
        self.client_errors.incr(name)
        self._log_once(name, "Kafka client error: %s", error)

    def _log_once(self, kind: str, message: str, *args: object) -> None:
        """Log a problem, and report it as the task's error (``squall show``, the UI), once per kind in
        ``ERROR_LOG_SECS``."""
        now = time.monotonic()
        if now >= self.error_logged.get(kind, 0.0):
            self.error_logged[kind] = now + ERROR_LOG_SECS
            log.warning(message, *args)
            self.report_error(message % args, where="Kafka client")

    def lag(self) -> dict:
        """``"<topic>-<partition>"`` -> high watermark minus position, where the watermark is known."""
        from confluent_kafka import TopicPartition

        out: dict = {}
        if self.consumer is None:
            return out
        for (topic, partition), position in sorted(self.positions.items()):
            _, high = self.consumer.get_watermark_offsets(TopicPartition(topic, partition), cached=True)
            if high >= 0:
                out[f"{topic}-{partition}"] = max(high - position, 0)
        return out


def _tp(tp: TP, offset: Optional[int] = None) -> "confluent_kafka.TopicPartition":
    from confluent_kafka import TopicPartition

    return TopicPartition(tp[0], tp[1]) if offset is None else TopicPartition(tp[0], tp[1], offset)
