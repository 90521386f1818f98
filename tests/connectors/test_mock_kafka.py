"""The test broker is a real Kafka-protocol cluster that other processes reach by address."""
import subprocess
import sys

import pytest

ck = pytest.importorskip("confluent_kafka")


def test_records_produced_by_another_process_are_read_back_with_their_offsets(kafka_bootstrap, topic_name):
    script = ("import sys, confluent_kafka as ck\n"
              "p = ck.Producer({'bootstrap.servers': sys.argv[1]})\n"
              "for i in range(40): p.produce(sys.argv[2], key=str(i), value=f'v{i}', partition=i % 4)\n"
              "sys.exit(p.flush(10))\n")
    subprocess.run([sys.executable, "-c", script, kafka_bootstrap, topic_name], check=True, timeout=60)
    consumer = ck.Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": "g", "enable.auto.commit": False})
    try:
        partitions = consumer.list_topics(topic_name, timeout=10).topics[topic_name].partitions
        assert len(partitions) == 4
        consumer.assign([ck.TopicPartition(topic_name, p, ck.OFFSET_BEGINNING) for p in partitions])
        got = []
        while len(got) < 40:
            batch = consumer.consume(40, timeout=10)
            assert batch, f"only {len(got)} of 40 records came back"
            got += [(m.partition(), m.offset(), m.value().decode()) for m in batch if m.error() is None]
        assert sorted(got) == sorted((i % 4, i // 4, f"v{i}") for i in range(40))
    finally:
        consumer.close()
