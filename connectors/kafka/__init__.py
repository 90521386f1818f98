"""Kafka in and out (extra ``squall[kafka]``: confluent-kafka): ``KafkaSpout`` and ``KafkaBolt``."""
from squall.connectors.kafka.bolt import KafkaBolt

__all__ = ["KafkaBolt"]
