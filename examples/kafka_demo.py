"""Kafka -> windowed word counts -> Parquet, on one machine: ``python examples/kafka_demo.py``.

1. start a mock Kafka cluster (librdkafka's, inside confluent-kafka: the Kafka
   protocol on loopback) and write sentences into a topic, paced, for
   ``DEMO_SECONDS`` (30) seconds;
2. submit ``examples/kafka_word_count.py`` to the local cluster, reading that
   topic and writing Parquet part files under a temporary directory;
3. once every sentence is in, let the last windows close and their part files
   roll, kill the topology, and read the committed files back with pyarrow
   (Spark reads the same directory with ``spark.read.parquet``).
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOPOLOGY_FILE = os.path.join(HERE, "kafka_word_count.py")
NAME = "kafka_word_count"
SENTENCES = ["the quick brown fox", "jumps over the lazy dog", "a stream of words", "the end of the stream"]


def squall(*args: str) -> None:
    print(f"\n$ squall {' '.join(args)}", flush=True)
    if subprocess.run([sys.executable, "-m", "squall.cli", *args]).returncode != 0:
        sys.exit(f"kafka_demo: `squall {' '.join(args)}` failed")


def feed(bootstrap: str, topic: str, seconds: float, rate: float = 200.0) -> int:
    """Write sentences at ``rate`` per second for ``seconds``; the count written."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    start, n = time.monotonic(), 0
    while time.monotonic() - start < seconds:
        producer.produce(topic, value=SENTENCES[n % len(SENTENCES)])
        n += 1
        producer.poll(0)
        time.sleep(max(0.0, n / rate - (time.monotonic() - start)))
    producer.flush(30)
    return n


def committed_counts(out: str) -> dict:
    import pyarrow.dataset as ds

    if not os.path.isdir(out):
        return {}
    table = ds.dataset(out, format="parquet").to_table()  # hidden (in-progress) files are skipped
    totals: dict = {}
    for word, n in zip(table.column("word").to_pylist(), table.column("count").to_pylist()):
        totals[word] = totals.get(word, 0) + n
    return totals


def main() -> None:
    from squall.testing.kafka import MockKafkaCluster

    seconds = float(os.environ.get("DEMO_SECONDS", "30"))
    out = os.path.join(tempfile.mkdtemp(prefix="kafka-demo-"), "word_counts")
    with MockKafkaCluster() as bootstrap:
        print(f"mock Kafka cluster at {bootstrap}")
        squall("submit", TOPOLOGY_FILE, "--config-property", f"kafka.bootstrap.servers={bootstrap}",
               "--config-property", "kafka.topics=sentences", "--config-property", f"files.path={out}")
        written = feed(bootstrap, "sentences", seconds)
        words = sum(len(SENTENCES[i % len(SENTENCES)].split()) for i in range(written))
        print(f"\nwrote {written} sentences ({words} words) to the topic 'sentences'")
        deadline = time.monotonic() + 60
        while sum(committed_counts(out).values()) < words and time.monotonic() < deadline:
            time.sleep(1)  # the last windows close, their part files roll
        squall("show", NAME)
        squall("kill", NAME)
    counts = committed_counts(out)
    print(f"\ncommitted Parquet under {out}: {sum(counts.values())} of {words} words counted")
    for word, n in sorted(counts.items(), key=lambda kv: -kv[1])[:8]:
        print(f"  {word:8} {n}")


if __name__ == "__main__":
    main()
