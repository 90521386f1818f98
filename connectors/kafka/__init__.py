"""Kafka in and out (extra ``squall[kafka]``: confluent-kafka): ``KafkaSpout`` and ``KafkaBolt``."""

from squall.connectors.kafka.spout import KafkaSpout

__all__ = ["KafkaSpout"]
