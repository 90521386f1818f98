"""The effectively-once sink's Kafka side: a transactional producer per transactional id, commits of
records with their marker in one transaction, and the reading of an owner's markers."""
from __future__ import annotations

import logging
import time
from typing import Any, Iterable, Mapping

from squall.connectors.kafka import commits

log = logging.getLogger(__name__)


class CommitAborted(Exception):
    """A transaction was aborted (an abortable error): its records stay pending and are committed later."""


class TransactionalWriter:
    """One transactional producer: ``start()`` fences every earlier producer of ``tid`` (Kafka aborts
    its open transaction, or completes one it was committing), then ``commit`` writes records and a
    commit marker atomically."""

    def __init__(self, client: Mapping[str, Any], topic: str, commits_topic: str, tid: str, timeout: float):
        self.client = dict(client)
        self.topic, self.commits_topic, self.tid, self.timeout = topic, commits_topic, tid, timeout
        self.producer: Any = None
        self.partitions = 0

    def start(self) -> "TransactionalWriter":
        from confluent_kafka import KafkaException, Producer

        self.producer = Producer({**self.client, "transactional.id": self.tid, "enable.idempotence": True})
        try:
            self.producer.init_transactions(self.timeout)
            meta = self.producer.list_topics(self.commits_topic, timeout=self.timeout).topics.get(self.commits_topic)
        except KafkaException as e:
            raise RuntimeError(f"Kafka transactional id {self.tid!r}: {e.args[0].str()}") from e
        if meta is None or meta.error is not None or not meta.partitions:
            raise RuntimeError(f"Kafka topic {self.commits_topic!r} (kafka.commits.topic) is not available")
        self.partitions = len(meta.partitions)
        return self

    def marker_partition(self, owner: str) -> int:
        return commits.marker_partition(owner, self.partitions)

    def end_offset(self, owner: str) -> int:
        """The end of ``owner``'s markers partition now: its later markers are at or after it."""
        from confluent_kafka import Consumer, TopicPartition

        consumer = Consumer(self._reader_config())
        try:
            low, high = consumer.get_watermark_offsets(TopicPartition(self.commits_topic,
                                                                      self.marker_partition(owner)),
                                                       timeout=self.timeout)
            return high
        finally:
            consumer.close()

    def committed_upto(self, owner: str, since: int) -> int:
        """The highest checkpoint ``owner`` committed (0: none), from its committed markers at ``since``
        and after in the commits topic (read_committed: a marker of an aborted transaction never counts)."""
        from confluent_kafka import Consumer, TopicPartition

        partition = self.marker_partition(owner)
        consumer = Consumer(self._reader_config())
        try:
            tp = TopicPartition(self.commits_topic, partition)
            low, high = consumer.get_watermark_offsets(tp, timeout=self.timeout)
            start = max(low, since)
            if start >= high:
                return 0
            consumer.assign([TopicPartition(self.commits_topic, partition, start)])
            found, position = [], start
            deadline = time.monotonic() + self.timeout
            while position < high:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"Kafka topic {self.commits_topic!r} partition {partition}: offsets "
                                       f"{position} to {high} were not read within {self.timeout:g} s")
                batch = consumer.consume(1000, timeout=0.1)  # returns at 1000 records or the timeout
                for m in batch:
                    if m.error() is None:
                        found.append((m.key(), m.value()))
                        position = m.offset() + 1
                position = max(position, consumer.position([tp])[0].offset)
            return commits.committed_upto(owner, found)
        finally:
            consumer.close()

    def commit(self, records: Iterable[tuple], owner: str, checkpoint_id: int) -> None:
        """Records and the marker ``owner -> checkpoint_id`` in one transaction. ``CommitAborted`` when
        the transaction had to be aborted; ``RuntimeError`` on a fatal error (this producer was fenced)."""
        from confluent_kafka import KafkaException

        p = self.producer
        try:
            p.begin_transaction()
            produce = p.produce
            topic = self.topic
            for key, value in records:
                try:
                    produce(topic, value, key)
                except BufferError:  # librdkafka's queue is full: let it drain
                    p.poll(0.1)
                    produce(topic, value, key)
            key, value = commits.marker(owner, checkpoint_id)
            produce(self.commits_topic, value, key, partition=self.marker_partition(owner))
            self._commit()
        except KafkaException as e:
            err = e.args[0]
            if err.txn_requires_abort():
                log.warning("Kafka transaction of %s for checkpoint %d aborted: %s", self.tid, checkpoint_id, err.str())
                p.abort_transaction(self.timeout)
                raise CommitAborted(err.str()) from e
            raise RuntimeError(f"Kafka transactional id {self.tid!r}, checkpoint {checkpoint_id}: {err.str()}") from e

    def _commit(self) -> None:
        from confluent_kafka import KafkaException

        while True:
            try:
                self.producer.commit_transaction(self.timeout)
                return
            except KafkaException as e:
                if not e.args[0].retriable():
                    raise
                log.warning("Kafka commit of %s: %s; retrying", self.tid, e.args[0].str())

    def close(self) -> None:
        if self.producer is not None:
            self.producer.flush(self.timeout)
            self.producer = None

    def _reader_config(self) -> dict:
        return {k: v for k, v in self.client.items() if k in ("bootstrap.servers",) or k.startswith("security.")
                or k.startswith("sasl.") or k.startswith("ssl.")} | {
            "group.id": "squall-kafka-bolt-recovery", "enable.auto.commit": False,
            "isolation.level": "read_committed", "log_level": 0}
