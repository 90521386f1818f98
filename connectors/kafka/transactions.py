"""The effectively-once sink's Kafka side: a transactional producer per transactional id, commits of
records with their marker in one transaction, and the reading of an owner's markers."""
from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Iterable, Mapping, Optional

if TYPE_CHECKING:  # an extra (squall[kafka]): imported where a producer is made
    import confluent_kafka

from squall.connectors.kafka import commits

log = logging.getLogger(__name__)

#: what a consumer of ours keeps from the producer's properties (where and how to connect)
_CONNECTION = ("bootstrap.servers", "security.", "sasl.", "ssl.", "client.dns", "broker.address.family")


class CommitAborted(Exception):
    """A transaction was aborted (an abortable error): its records stay pending and are committed later."""


class TransactionalWriter:
    """One transactional producer: ``start()`` fences every earlier producer of ``tid`` (Kafka aborts
    its open transaction, or completes one it was committing), then ``commit`` writes records and a
    commit marker atomically."""

    def __init__(self, client: Mapping[str, object], topic: str, commits_topic: str, tid: str, timeout: float):
        self.client = dict(client)
        self.topic, self.commits_topic, self.tid, self.timeout = topic, commits_topic, tid, timeout
        self.producer: Optional["confluent_kafka.Producer"] = None
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
        """The log end of ``owner``'s markers partition now (every record, committed or not): its later
        markers are at or after it."""
        from confluent_kafka import Consumer, KafkaException, TopicPartition

        consumer = Consumer(self._reader_config("read_uncommitted"))
        try:
            tp = TopicPartition(self.commits_topic, self.marker_partition(owner))
            return consumer.get_watermark_offsets(tp, timeout=self.timeout)[1]
        except KafkaException as e:
            raise RuntimeError(f"Kafka topic {self.commits_topic!r}: {e.args[0].str()}") from e
        finally:
            consumer.close()

    def committed_upto(self, owner: str, since: int) -> int:
        """The highest checkpoint ``owner`` committed (0: none), from its markers at offset ``since``
        and after in the commits topic. Read read_committed (a marker of an aborted transaction never
        counts) up to the partition's log end as it is now, so a transaction still open before it (some
        other task's) is waited for rather than read past."""
        from confluent_kafka import Consumer, KafkaError, TopicPartition

        end = self.end_offset(owner)
        partition = self.marker_partition(owner)
        if since >= end:
            return 0
        consumer = Consumer({**self._reader_config("read_committed"), "enable.partition.eof": True})
        try:
            consumer.assign([TopicPartition(self.commits_topic, partition, since)])
            found, position = [], since
            deadline = time.monotonic() + self.timeout
            while position < end:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"Kafka topic {self.commits_topic!r} partition {partition}: committed "
                                       f"records up to offset {end} not read within {self.timeout:g} s (at "
                                       f"{position}; a transaction still open there?)")
                for m in consumer.consume(1000, timeout=0.1):  # returns at 1000 records or the timeout
                    err = m.error()
                    if err is None:
                        found.append((m.key(), m.value()))
                        position = max(position, m.offset() + 1)
                    elif err.code() == KafkaError._PARTITION_EOF:  # its offset is past control records too
                        position = max(position, m.offset())
            return commits.committed_upto(owner, found)
        finally:
            consumer.close()

    def commit(self, records: Iterable[tuple], owner: str, checkpoint_id: int) -> int:
        """Records and the marker ``owner -> checkpoint_id`` in one transaction; the marker's offset.
        ``CommitAborted`` when the transaction had to be aborted; ``RuntimeError`` on a fatal error (this
        producer was fenced)."""
        from confluent_kafka import KafkaException

        p = self.producer
        where: list = []
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
            produce(self.commits_topic, value, key, partition=self.marker_partition(owner),
                    on_delivery=lambda err, msg: where.append(msg.offset() if err is None else -1))
            p.flush(self.timeout)  # serves the delivery reports (the marker's offset)
            self._commit()
        except KafkaException as e:
            err = e.args[0]
            if err.txn_requires_abort():
                log.warning("Kafka transaction of %s for checkpoint %d aborted: %s", self.tid, checkpoint_id, err.str())
                p.abort_transaction(self.timeout)
                raise CommitAborted(err.str()) from e
            raise RuntimeError(f"Kafka transactional id {self.tid!r}, checkpoint {checkpoint_id}: {err.str()}") from e
        return where[0] if where else -1

    def _commit(self) -> None:
        from confluent_kafka import KafkaException

        deadline = time.monotonic() + self.timeout
        while True:
            try:
                self.producer.commit_transaction(self.timeout)
                return
            except KafkaException as e:
                if not e.args[0].retriable() or time.monotonic() > deadline:
                    raise
                log.warning("Kafka commit of %s: %s; retrying", self.tid, e.args[0].str())

    def close(self) -> None:
        if self.producer is not None:
            self.producer.flush(self.timeout)
            self.producer = None

    def _reader_config(self, isolation: str) -> dict:
        config = {k: v for k, v in self.client.items() if k.startswith(_CONNECTION)}
        return {**config, "group.id": "squall-kafka-bolt-recovery", "enable.auto.commit": False,
                "auto.offset.reset": "earliest", "isolation.level": isolation}
