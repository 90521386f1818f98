"""What the Kafka spout and bolt share: their keys, their librdkafka configs, the checks made before a launch.

Every connector key lives in ``kafka.*``; ``kafka.consumer.<property>`` and ``kafka.producer.<property>``
pass any librdkafka property through. A topology may set keys for a spout and a bolt at its own level, so
a key is refused only when neither knows it (naming the nearest known one).
"""
from __future__ import annotations

import difflib
from typing import Iterable, Mapping

BOOTSTRAP = "kafka.bootstrap.servers"
PASS_THROUGH = ("kafka.consumer.", "kafka.producer.")

#: every ``kafka.*`` key a Kafka connector reads (besides the pass-through prefixes), with its meaning
KEYS: dict = {
    BOOTSTRAP: "host:port,... of the brokers",
    # KafkaSpout
    "kafka.topics": "comma-separated topics the spout reads",
    "kafka.group.id": "the consumer group offsets are committed to",
    "kafka.start": "earliest | latest | committed (then earliest): where a partition without saved state starts",
    "kafka.value.format": "utf-8 (default) | bytes | json",
    "kafka.discover.interval.secs": "how often the spout looks for new partitions (30)",
    "kafka.commit.interval.secs": "ATLEAST_ONCE: how often acked offsets are committed to the group (5)",
    "kafka.max.uncommitted.per.partition": "ATLEAST_ONCE: records open in a partition before it is paused (5000)",
    "kafka.batch.size": "records the spout reads per next_tuple call at most (500)",
    "kafka.retry.initial.secs": "ATLEAST_ONCE: wait before a failed record is emitted again, doubled per failure (0.5)",
    "kafka.retry.max.secs": "ATLEAST_ONCE: the longest wait before a failed record is emitted again (30)",
    # KafkaBolt
    "kafka.topic": "the topic the bolt writes",
    "kafka.key.field": "the tuple field whose value is the record key",
    "kafka.value.field": "the tuple field whose value is the record value (default: the tuple as JSON)",
    "kafka.commits.topic": "EFFECTIVELY_ONCE: the topic of the bolt's commit markers (default <kafka.topic>.squall-commits)",
}


def check_keys(config: Mapping[str, object]) -> None:
    """Refuse a ``kafka.*`` key no Kafka connector knows, naming the nearest known one."""
    for key in config:
        if key.startswith("kafka.") and key not in KEYS and not key.startswith(PASS_THROUGH):
            close = difflib.get_close_matches(key, list(KEYS), n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]!r}?" if close else f" (known: {', '.join(sorted(KEYS))})"
            raise ValueError(f"unknown Kafka connector key {key!r}{hint}")


def required(config: Mapping[str, object], key: str) -> str:
    """A key that must be set, as a non-empty string."""
    value = config.get(key)
    if value is None or str(value).strip() == "":
        raise ValueError(f"{key} is not set: {KEYS[key]}")
    return str(value).strip()


def client_config(config: Mapping[str, object], role: str) -> dict:
    """librdkafka properties for a ``consumer`` or ``producer``: the bootstrap servers, then every
    ``kafka.<role>.<property>`` key with its prefix taken off."""
    prefix = f"kafka.{role}."
    out = {"bootstrap.servers": required(config, BOOTSTRAP)}
    out.update({k[len(prefix):]: v for k, v in config.items() if k.startswith(prefix)})
    return out


def check_cluster(config: Mapping[str, object], topics: Iterable[str], timeout: float = 5.0) -> None:
    """The brokers answer and every topic exists (a consumer that does not auto-create topics asks).
    ``OSError`` for brokers that do not answer, ``ValueError`` for a missing topic: one line each."""
    from confluent_kafka import Consumer, KafkaException

    servers = required(config, BOOTSTRAP)
    consumer = Consumer({**client_config(config, "consumer"), "group.id": "squall-preflight",
                         "allow.auto.create.topics": False, "log_level": 0})
    try:
        try:
            consumer.list_topics(timeout=timeout)
        except KafkaException as e:
            raise OSError(f"{BOOTSTRAP} {servers}: no broker answered within {timeout:g} s "
                          f"({e.args[0].str()})") from None
        for topic in topics:
            found = consumer.list_topics(topic, timeout=timeout).topics.get(topic)
            if found is None or found.error is not None:
                raise ValueError(f"Kafka topic {topic!r} does not exist on {servers}")
    finally:
        consumer.close()
