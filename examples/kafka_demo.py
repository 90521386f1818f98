"""Kafka -> windowed word counts -> Parquet, on one machine: ``python examples/kafka_demo.py``.

1. start a mock Kafka cluster (librdkafka's, inside confluent-kafka: the Kafka
   protocol on loopback) with a topic ``sentences``;
2. submit ``examples/kafka_word_count.py`` to the local cluster, reading that
   topic and writing Parquet part files under a temporary directory, and
   write sentences into the topic, paced, for ``DEMO_SECONDS`` (30) seconds;
3. once every sentence is in, write a trickle of heartbeats so that the last
   windows close (event time) and their part files roll, kill the topology, and read the committed files back with pyarrow
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
HEARTBEAT = "heartbeat"  # words written after the sentences, so that their last windows close (event time)


def squall(*args: str) -> None:
    print(f"\n$ squall {' '.join(args)}", flush=True)
    if subprocess.run([sys.executable, "-m", "squall.cli", *args]).returncode != 0:
        sys.exit(f"kafka_demo: `squall {' '.join(args)}` failed")


def feed(producer: object, topic: str, seconds: float, rate: float = 200.0) -> int:
    """Write sentences at ``rate`` per second for ``seconds``; the count written."""
    start, n = time.monotonic(), 0
    while time.monotonic() - start < seconds:
        producer.produce(topic, value=SENTENCES[n % len(SENTENCES)])
        n += 1
        producer.poll(0)
        time.sleep(max(0.0, n / rate - (time.monotonic() - start)))
    producer.flush(30)
    return n


def counted(counts: dict) -> int:
    """Words of the sentences counted (the heartbeats left out)."""
    return sum(n for word, n in counts.items() if not word.startswith(HEARTBEAT))


def committed_counts(out: str) -> dict:
    import pyarrow.dataset as ds

    if not os.path.isdir(out):
        return {}
    dataset = ds.dataset(out, format="parquet")  # hidden (in-progress, pending) files are skipped
    if "word" not in dataset.schema.names:
        return {}  # no part committed yet
    table = dataset.to_table()
    totals: dict = {}
    for word, n in zip(table.column("word").to_pylist(), table.column("count").to_pylist()):
        totals[word] = totals.get(word, 0) + n
    return totals


def main() -> None:
    from squall.testing.kafka import MockKafkaCluster

    seconds = float(os.environ.get("DEMO_SECONDS", "30"))
    out = os.path.join(tempfile.mkdtemp(prefix="kafka-demo-"), "word_counts")
    from confluent_kafka import Producer

    with MockKafkaCluster() as bootstrap:
        print(f"mock Kafka cluster at {bootstrap}")
        producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
        producer.list_topics("sentences", timeout=10)  # the mock cluster creates the topic (submit checks it)
        squall("submit", TOPOLOGY_FILE, "--config-property", f"kafka.bootstrap.servers={bootstrap}",
               "--config-property", "kafka.topics=sentences", "--config-property", f"files.path={out}")
        try:
            written = feed(producer, "sentences", seconds)
            words = sum(len(SENTENCES[i % len(SENTENCES)].split()) for i in range(written))
            print(f"\nwrote {written} sentences ({words} words) to the topic 'sentences'")
            # Event-time windows close when later records move the watermark past them: keep a trickle of
            # "heartbeat" records coming until the last sentences' windows are committed.
            deadline = time.monotonic() + 90
            beat = 0
            while counted(committed_counts(out)) < words and time.monotonic() < deadline:
                producer.produce("sentences", value=f"{HEARTBEAT}{beat % 16}")  # words for every count task
                producer.poll(0.1)
                beat += 1
            squall("show", NAME)
        finally:
            squall("kill", NAME)
    counts = committed_counts(out)
    print(f"\ncommitted Parquet under {out}: {counted(counts)} of {words} words counted")
    for word, n in sorted(((w, n) for w, n in counts.items() if not w.startswith(HEARTBEAT)),
                          key=lambda kv: -kv[1])[:8]:
        print(f"  {word:8} {n}")


if __name__ == "__main__":
    main()
