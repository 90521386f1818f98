"""Kafka in and out (extra ``squall[kafka]``: confluent-kafka): ``KafkaSpout`` and ``KafkaBolt``."""
from squall.connectors.kafka.bolt import KafkaBolt
from squall.connectors.kafka.spout import KafkaSpout

__all__ = ["KafkaBolt", "KafkaSpout"]
