"""A Kafka-protocol broker for tests: librdkafka's mock cluster, held by a helper process.

librdkafka (inside confluent-kafka's wheel) serves a mock cluster on loopback
when a client is made with ``test.mock.num.brokers``: real Kafka protocol over
TCP, topics auto-created with 4 partitions (or made with the admin client's
``create_topics``), consumer-group offsets, watermarks and transactions.
A helper process holds that client for as long as the cluster is wanted, and
every other process (spouts, bolts, the test itself) reaches its brokers by
address, as it would a real cluster. docs/connectors.md says where it differs
from a real broker.

``SQUALL_TEST_KAFKA=host:port`` names a real cluster instead.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from typing import Optional

REAL_KAFKA_ENV = "SQUALL_TEST_KAFKA"


class MockKafkaCluster:
    """``with MockKafkaCluster() as bootstrap:`` a ``host:port,...`` list of live mock brokers.

    ``stop()`` (or leaving the block) ends the helper process and with it the brokers.
    """

    def __init__(self, brokers: int = 3, start_timeout: float = 30.0):
        self.brokers = brokers
        self.start_timeout = start_timeout
        self.proc: Optional[subprocess.Popen] = None
        self.bootstrap = ""

    def start(self) -> str:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "squall.testing.kafka", str(self.brokers)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        deadline = time.monotonic() + self.start_timeout
        line = self.proc.stdout.readline().strip()  # the helper prints its bootstrap list, then waits
        if not line or time.monotonic() > deadline:
            self.stop()
            raise RuntimeError("the mock Kafka cluster did not start (is confluent-kafka installed? "
                               "pip install 'squall[kafka]')")
        self.bootstrap = line
        return line

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.stdin.close()  # the helper exits when its stdin closes
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def __enter__(self) -> str:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def real_kafka() -> Optional[str]:
    """The bootstrap list of the real cluster ``SQUALL_TEST_KAFKA`` names, if any."""
    return os.environ.get(REAL_KAFKA_ENV) or None


def _serve(brokers: int) -> None:
    from confluent_kafka import Producer

    holder = Producer({"test.mock.num.brokers": brokers, "bootstrap.servers": "", "log_level": 0})
    metadata = holder.list_topics(timeout=30)
    print(",".join(f"{b.host}:{b.port}" for b in sorted(metadata.brokers.values(), key=lambda b: b.id)), flush=True)
    sys.stdin.read()  # until the parent closes it, or dies


if __name__ == "__main__":
    _serve(int(sys.argv[1]))
