"""Kafka in and out (extra ``squall[kafka]``: confluent-kafka): ``KafkaSpout`` and ``KafkaBolt``."""
