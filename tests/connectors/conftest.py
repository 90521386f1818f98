"""The connectors' test broker: librdkafka's mock cluster in a helper process (one per test session), or the
real cluster ``SQUALL_TEST_KAFKA=host:port`` names."""
import uuid

import pytest

from squall.testing.kafka import MockKafkaCluster, real_kafka

from e2e_harness import cluster, zk_cluster  # noqa: F401  (the local cluster fixtures)


@pytest.fixture(scope="session")
def kafka_bootstrap():
    """``host:port,...`` of a Kafka cluster for this session."""
    pytest.importorskip("confluent_kafka", reason="the Kafka connectors need confluent-kafka (squall[kafka])")
    real = real_kafka()
    if real:
        yield real
        return
    with MockKafkaCluster() as bootstrap:
        yield bootstrap


@pytest.fixture
def topic_name():
    """A topic name no other test uses (the mock cluster creates it, 4 partitions, on first use)."""
    return f"t-{uuid.uuid4().hex[:10]}"
