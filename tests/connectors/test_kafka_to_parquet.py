"""Kafka in, Parquet out, with every role killed and the spout rescaled mid-run: what Spark reads is exact.

40,000 keyed records arrive in a 4-partition topic while tests/connectors/topologies/kafka_to_parquet.py
runs (KafkaSpout par 2 -> a stateless bolt -> FileSink). Mid-run: SIGKILL of a KafkaSpout task, of a stream
manager, of a whole container, then ``update --component-parallelism kafka=3``. At EFFECTIVELY_ONCE, PySpark
reads exactly one row per (partition, offset); at ATLEAST_ONCE, at least one.
"""
import os
import signal
import threading
import time

import pytest

from squall.testing import wait_until  # noqa: E402

ck = pytest.importorskip("confluent_kafka")
pq = pytest.importorskip("pyarrow.parquet")

HERE = os.path.dirname(os.path.abspath(__file__))
TOPOLOGY = os.path.join(HERE, "topologies", "kafka_to_parquet.py")
RECORDS = 40_000
RATE = 4000  # records/s the producer writes: 10 s of arrivals, processed behind them through four faults


class Feed(threading.Thread):
    """Produces ``RECORDS`` keyed records, paced, as an application writing to Kafka would."""

    def __init__(self, bootstrap: str, topic: str):
        super().__init__(daemon=True)
        self.producer = ck.Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
        self.producer.list_topics(topic, timeout=10)  # the mock cluster creates it (submit checks it exists)
        self.topic = topic
        self.sent = 0
        self.error = None

    def run(self):
        start = time.monotonic()
        try:
            for i in range(RECORDS):
                self.producer.produce(self.topic, key=f"k{i % 997}", value=f"record {i}")
                if i % 500 == 499:
                    self.producer.poll(0)
                    ahead = (i + 1) / RATE - (time.monotonic() - start)
                    if ahead > 0:
                        time.sleep(ahead)  # pacing the feed, not placing an event
                self.sent = i + 1
            left = self.producer.flush(60)
            if left:
                self.error = f"{left} records not delivered"
        except Exception as e:  # the test reports it
            self.error = repr(e)


def visible_rows(out):
    """Rows in the sink's committed (visible) part files; in-progress ones are hidden (``.``/``_``)."""
    total = 0
    for folder, _, files in os.walk(out):
        if any(part.startswith((".", "_")) for part in os.path.relpath(folder, out).split(os.sep) if part != "."):
            continue
        for name in files:
            if name.endswith(".parquet") and not name.startswith((".", "_")):
                total += pq.ParquetFile(os.path.join(folder, name)).metadata.num_rows
    return total


def records_read(out):
    """Distinct (partition, offset) in the committed part files."""
    import pyarrow.dataset as ds

    if not os.path.isdir(out):
        return 0
    dataset = ds.dataset(out, format="parquet")  # hidden (in-progress, pending) files are skipped
    if "offset" not in dataset.schema.names:
        return 0  # no part committed yet
    table = dataset.to_table(columns=["partition", "offset"])
    return len(set(zip(table.column("partition").to_pylist(), table.column("offset").to_pylist())))


def caught_up(cluster):
    """The source partitions ``squall metrics --json`` shows, once each is read to its end (lag 0)."""
    import json

    sources = json.loads(cluster.squall("metrics", "kafka_to_parquet", "--json")[0]).get("sources", [])
    latest = {p["partition"]: p for p in sources}  # after a rescale, one entry per task that read it
    return list(latest.values()) if len(latest) == 4 and all(p["lag"] == 0 for p in sources) else None


def reported(run_dir):
    """``(partitions, partitions with a rate)`` the spout's tasks reported (``__source-partitions``: each it
    owns, with its lag, every bucket) in the metrics files."""
    import glob
    import json

    from squall.metrics import SOURCE_PARTITIONS

    partitions, read = set(), set()
    for path in glob.glob(os.path.join(run_dir, "metrics", "container-*.jsonl")):
        with open(path) as f:
            for row in map(json.loads, f):
                user = row["user"] if isinstance(row["user"], dict) else json.loads(row["user"] or "{}")
                partitions |= set(user.get(SOURCE_PARTITIONS, {}))
                read |= {k for k, v in user.get(SOURCE_PARTITIONS, {}).items() if v["records_per_sec"] > 0}
    return partitions, read


def process(cluster, prefix, container=None):
    import json

    show = json.loads(cluster.squall("show", "kafka_to_parquet", "--json")[0])
    return next(p for p in show["processes"]
                if p["process"].startswith(prefix) and (container is None or p["container"] == container))


def progress(out, beyond, what):
    """Committed rows grow after a fault (or every record is already committed: none can come)."""
    wait_until(lambda: visible_rows(out) > beyond or visible_rows(out) >= RECORDS, timeout=90, interval=0.5,
               what=f"committed rows past {beyond} ({what})")
    return visible_rows(out)


@pytest.mark.parametrize("mode", ["EFFECTIVELY_ONCE", "ATLEAST_ONCE"])
def test_faults_and_a_rescale_leave_exactly_one_row_per_record(cluster, kafka_bootstrap, topic_name, tmp_path,
                                                                spark, mode):
    out = str(tmp_path / "out")
    feed = Feed(kafka_bootstrap, topic_name)
    feed.start()
    cluster.squall("submit", TOPOLOGY,
                   "--config-property", f"topology.reliability.mode={mode}",
                   "--config-property", f"kafka.bootstrap.servers={kafka_bootstrap}",
                   "--config-property", f"kafka.topics={topic_name}",
                   "--config-property", f"files.path={out}",
                   # at least once a tree is acked once its part is committed and the checkpoint after it
                   # is complete (a few seconds): a spout task keeps that long's records in flight
                   "--config-property", "topology.max.spout.pending=20000",
                   # lag and rates reach the metrics (and so the waits below) a bucket at a time
                   "--config-property", "topology.builtin.metrics.bucket.size.secs=1")
    done = progress(out, 0, "before any fault")
    os.kill(process(cluster, "instance kafka")["pid"], signal.SIGKILL)
    done = progress(out, done, "after a KafkaSpout task's SIGKILL")
    os.kill(process(cluster, "stmgr", container=2)["pid"], signal.SIGKILL)
    done = progress(out, done, "after a stream manager's SIGKILL")
    executor = process(cluster, "executor", container=1)["pid"]
    os.killpg(os.getpgid(executor), signal.SIGKILL)
    done = progress(out, done, "after container 1's SIGKILL")
    cluster.squall("update", "kafka_to_parquet", "--component-parallelism", "kafka=3")
    progress(out, done, "with 3 KafkaSpout tasks")
    feed.join(120)
    assert feed.error is None and feed.sent == RECORDS, (feed.error, feed.sent)
    wait_until(lambda: records_read(out) >= RECORDS, timeout=120, interval=1,
               what=f"all {RECORDS} records committed (so far {records_read(out)})")
    # every partition read to its end: squall metrics shows each with its lag (the UI and the report too)
    sources = wait_until(lambda: caught_up(cluster), timeout=30, what="every partition's lag at 0")
    assert sorted(p["partition"] for p in sources) == [f"{topic_name}-{p}" for p in range(4)]
    # the reports' input: a process sends a bucket's row when the bucket ends (the killed container's last
    # rows died with its processes, and with them the rate of a partition read to its end before the kill):
    # each partition with its lag, and rates
    partitions, read = wait_until(lambda: (lambda r: r if r[0] == {p["partition"] for p in sources} else None)(
        reported(cluster.run_dir("kafka_to_parquet"))), timeout=60, what="every partition in the metrics files")
    assert read and read <= partitions
    cluster.squall("kill", "kafka_to_parquet")

    rows = spark.read.parquet(out)
    per_record = rows.groupBy("partition", "offset").count()
    distinct = per_record.count()
    assert distinct == RECORDS  # every record arrived
    if mode == "EFFECTIVELY_ONCE":
        assert rows.count() == RECORDS  # and once
        assert per_record.filter("count > 1").count() == 0
    values = {r["value"] for r in rows.select("value").distinct().collect()}
    assert values == {f"RECORD {i}" for i in range(RECORDS)}
