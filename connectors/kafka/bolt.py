"""``KafkaBolt``: a sink that writes each tuple as a record to one Kafka topic, in every delivery mode.

- ATMOST_ONCE: produced, not waited for.
- ATLEAST_ONCE: a tuple is acked once the broker confirmed its record and failed (the spout replays it)
  when the broker refused it or did not confirm it in time: each received batch is produced, then the
  producer is flushed, so its delivery callbacks ack or fail every tuple before the next batch (in-flight
  records are bounded by a batch, and no tuple waits for a later one to be acked).
- EFFECTIVELY_ONCE: a two-phase commit sink (Flink's ``TwoPhaseCommitSinkFunction``): the records of a
  checkpoint period are held, put in the task's state at ``pre_save`` and written in one Kafka
  transaction at ``post_save`` (the checkpoint is complete), together with a commit marker in
  ``kafka.commits.topic``; a restore commits what a dead task saved and had not committed
  (``commits.py`` has the bookkeeping, ``transactions.py`` the Kafka side, docs/connectors.md the why).
"""
from __future__ import annotations

import logging
import time
import uuid
from typing import TYPE_CHECKING, Mapping, Optional, Union

from squall.connectors.kafka import commits
from squall.connectors.kafka.common import BOOTSTRAP, check_cluster, check_keys, client_config, required
from squall.connectors.kafka.records import encoder
from squall.metrics import CountMetric, MeanMetric
from squall.component import TopologyContext, Tuple, TupleBatch
from squall.stateful import KeyValueState, StatefulBolt

if TYPE_CHECKING:  # an extra (squall[kafka]): imported where a producer is made
    import confluent_kafka

    from squall.connectors.kafka.transactions import TransactionalWriter

log = logging.getLogger(__name__)

MODE = "topology.reliability.mode"
TOPIC = "kafka.topic"
COMMITS = "kafka.commits.topic"
TIMEOUT = 30.0  # seconds a Kafka call of the transactional sink may take


def commits_topic(config: Mapping[str, object]) -> str:
    """``kafka.commits.topic``, by default ``<kafka.topic>.squall-commits``."""
    value = config.get(COMMITS)
    return str(value).strip() if value else f"{required(config, TOPIC)}.squall-commits"


class KafkaBolt(StatefulBolt):
    """Writes every input tuple to ``kafka.topic``: key ``kafka.key.field`` (none: no key), value
    ``kafka.value.field`` (none: the tuple as a JSON object). docs/connectors.md has every key.

    A ``StatefulBolt`` because at EFFECTIVELY_ONCE its pending records are state; in the other modes its
    state stays empty (but the topology then takes checkpoints, and at ATLEAST_ONCE its acks wait for
    the next one: Storm's rule for stateful bolts)."""

    # -------------------------------------------------------------- checks before a launch
    @classmethod
    def check_config(cls, config: Mapping[str, object]) -> None:
        check_keys(config)
        required(config, BOOTSTRAP)
        required(config, TOPIC)
        mode = config.get(MODE, "ATMOST_ONCE")
        acks = str(config.get("kafka.producer.acks", "all")).strip()
        if mode == "ATLEAST_ONCE" and acks == "0":
            raise ValueError("kafka.producer.acks is 0: at ATLEAST_ONCE a tuple is acked when the broker "
                             "confirms its record, which acks=0 never does")
        if mode == "EFFECTIVELY_ONCE":
            if "kafka.producer.transactional.id" in config:
                raise ValueError("kafka.producer.transactional.id is set: at EFFECTIVELY_ONCE the Kafka bolt "
                                 "sets it itself (a transactional producer per task)")
            if str(config.get("kafka.producer.enable.idempotence", "true")).strip().lower() in ("false", "0"):
                raise ValueError("kafka.producer.enable.idempotence is false: at EFFECTIVELY_ONCE the Kafka bolt's "
                                 "transactional producer needs it")
            if acks not in ("all", "-1"):
                raise ValueError(f"kafka.producer.acks is {acks}: at EFFECTIVELY_ONCE transactions need acks=all")
            if commits_topic(config) == required(config, TOPIC):
                raise ValueError(f"{COMMITS} is the output topic {required(config, TOPIC)!r}: the commit markers "
                                 "need a topic of their own")

    @classmethod
    def preflight(cls, config: Mapping[str, object]) -> None:
        topics = [required(config, TOPIC)]
        if config.get(MODE) == "EFFECTIVELY_ONCE":
            topics.append(commits_topic(config))
        check_cluster(config, topics)

    # -------------------------------------------------------------- every mode
    def initialize(self, config: Mapping[str, object], context: TopologyContext) -> None:
        self.mode = config.get(MODE, "ATMOST_ONCE")
        self.topic = required(config, TOPIC)
        self.client = client_config(config, "producer")
        self.key_field: Optional[str] = config.get("kafka.key.field")
        self.value_field: Optional[str] = config.get("kafka.value.field")
        self.delivery_timeout = float(config.get("topology.message.timeout.secs", 30))
        self.context = context
        self.commits = commits_topic(config)
        self.encoders: dict = {}  # (component, stream) -> tuple values -> (key, value)
        self.producer: Optional["confluent_kafka.Producer"] = None
        self.writer: Optional["TransactionalWriter"] = None  # the transactional producer (EFFECTIVELY_ONCE)
        self.state = KeyValueState()
        self.buffer: list = []
        # metrics (docs/metrics.md, a task's ``user`` figures): records handed to Kafka (at least once:
        # confirmed; effectively once: committed), records not confirmed, ms per transaction commit
        self.records = context.register_metric("kafka_records", CountMetric())
        self.refused = context.register_metric("kafka_refused", CountMetric())
        self.commit_ms = context.register_metric("kafka_commit_ms", MeanMetric())
        if self.mode != "EFFECTIVELY_ONCE":
            from confluent_kafka import Producer

            self.producer = Producer(self.client)

    def _records(self, source: Union[Tuple, TupleBatch], values: list) -> list:
        """``(key, value)`` records of tuple values from ``source`` (a tuple or a batch: its component,
        stream and fields)."""
        encode = self.encoders.get((source.component, source.stream))
        if encode is None:
            encode = self.encoders[(source.component, source.stream)] = encoder(
                source.fields, self.key_field, self.value_field)
        return [encode(v) for v in values]

    def process(self, tup: Tuple) -> None:
        if not self._write(self._records(tup, [tup.values])):
            self.fail(tup)

    def process_batch(self, batch: TupleBatch) -> None:
        """A received run: acked when this returns (``auto_ack``), failed when a record was not confirmed."""
        if not self._write(self._records(batch, batch.values)):
            self.fail(batch)

    def _write(self, records: list) -> bool:
        if self.mode == "EFFECTIVELY_ONCE":
            self.buffer.extend(records)
            return True
        if self.mode == "ATLEAST_ONCE":
            return self._produce_confirmed(records)
        self._produce_unconfirmed(records)
        return True

    def close(self) -> None:
        if self.producer is not None:
            self.producer.flush(self.delivery_timeout)
        if self.writer is not None:
            self.writer.close()

    # -------------------------------------------------------------- ATMOST_ONCE
    def _produce_unconfirmed(self, records: list) -> None:
        produce, topic = self.producer.produce, self.topic
        for key, value in records:
            try:
                produce(topic, value, key)
            except BufferError:  # librdkafka's queue is full: wait for room (memory stays bounded)
                self.producer.poll(0.1)
                produce(topic, value, key)
        self.records.incr(len(records))
        self.producer.poll(0)

    # -------------------------------------------------------------- ATLEAST_ONCE
    def _produce_confirmed(self, records: list) -> bool:
        """Produce the records and wait for the broker's answers: False when one was refused or not
        confirmed within ``topology.message.timeout.secs`` (the tuples then fail, and their spouts
        replay them)."""
        producer, topic = self.producer, self.topic
        refused: list = []
        confirmed = [0]

        def delivered(err: Optional["confluent_kafka.KafkaError"], msg: "confluent_kafka.Message") -> None:
            if err is None:
                confirmed[0] += 1
            else:
                refused.append(err)

        for key, value in records:
            while True:
                try:
                    producer.produce(topic, value, key, on_delivery=delivered)
                    break
                except BufferError:  # librdkafka's queue is full: wait for room
                    producer.poll(0.1)
        producer.flush(self.delivery_timeout)
        self.records.incr(confirmed[0])
        if refused or confirmed[0] < len(records):
            self.refused.incr(len(records) - confirmed[0])
            log.warning("Kafka topic %s: %d of %d records not confirmed (%s); their tuples fail", topic,
                        len(records) - confirmed[0], len(records), refused[0] if refused else "timed out")
            return False
        return True

    # -------------------------------------------------------------- EFFECTIVELY_ONCE
    def init_state(self, state: KeyValueState) -> None:
        """At the start and on every rollback: records held since the restored checkpoint are dropped
        (the replay makes them again), and every entry of the restored state is committed up to what
        its owner's markers say is committed already, then forgotten."""
        self.state, self.buffer = state, []
        if self.mode != "EFFECTIVELY_ONCE":
            return
        tasks = self.context.get_component_tasks(self.context.get_component_id())
        index = tasks.index(self.context.get_task_id())
        tid = f"{self.context.topology_name}.{self.context.get_component_id()}.{index}of{len(tasks)}"
        if self.writer is None or self.writer.tid != tid:  # the first start, or a rescale moved this task
            if self.writer is not None:
                self.writer.close()
            self.writer = self._writer(tid)
        for key in [k for k in state.keys() if commits.is_entry_key(k)]:
            self._recover(state.get(key))
            state.delete(key)
        owner = f"{tid}.{uuid.uuid4().hex[:12]}"
        self.entry = commits.new_entry(tid, owner, self.writer.end_offset(owner))

    def _writer(self, tid: str) -> "TransactionalWriter":
        from squall.connectors.kafka.transactions import TransactionalWriter

        return TransactionalWriter(self.client, self.topic, self.commits, tid, TIMEOUT).start()

    def _recover(self, entry: dict) -> None:
        """Commit what ``entry``'s checkpoints hold beyond its owner's last committed marker, with its own
        transactional id (fenced first, so a commit it was making is completed or aborted before we look)."""
        writer = self.writer if entry["tid"] == self.writer.tid else self._writer(entry["tid"])
        try:
            done = writer.committed_upto(entry["owner"], entry["since"])
            last, records = commits.due(entry, float("inf"), done)
            if last is not None:
                log.info("committing %d records of checkpoints up to %d that %s saved and had not committed",
                         len(records), last, entry["owner"])
                writer.commit(records, entry["owner"], last)
        finally:
            if writer is not self.writer:
                writer.close()

    def pre_save(self, checkpoint_id: int) -> None:
        if self.mode != "EFFECTIVELY_ONCE" or not self.buffer:
            return
        commits.add(self.entry, checkpoint_id, self.buffer)
        self.buffer = []
        self.state.put(commits.entry_key(self.entry["tid"]), self.entry)

    def post_save(self, checkpoint_id: int) -> None:
        if self.mode != "EFFECTIVELY_ONCE":
            return
        from squall.connectors.kafka.transactions import CommitAborted

        last, records = commits.due(self.entry, checkpoint_id)
        if last is None:
            return
        started = time.perf_counter()
        try:
            offset = self.writer.commit(records, self.entry["owner"], last)
            self.commit_ms.update((time.perf_counter() - started) * 1000)
            self.records.incr(len(records))
        except CommitAborted:
            return  # still pending: the next post_save commits them with the next checkpoint's
        commits.drop(self.entry, last)
        if offset >= 0:  # a recovery looks for this owner's markers from there on
            self.entry["since"] = offset
        key = commits.entry_key(self.entry["tid"])
        if self.entry["checkpoints"]:
            self.state.put(key, self.entry)
        else:
            self.state.delete(key)
