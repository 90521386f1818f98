"""The connectors against their clients alone, measured in one invocation.

    .venv/bin/python bench/connectors.py [--records 200000] [--rows 5000000] [--rounds 2]   # about 4 minutes

Kafka: a mock cluster (librdkafka's, in a helper process, as the tests use) holds ``--records`` records
(a 10-byte key and a 64-byte value, 4 partitions), written before anything is timed (the mock keeps
about 60,000 records a partition: more are deleted from the start).

- baseline: a bare confluent-kafka consumer loop in this process: assign every partition from the
  beginning, ``consume(1000)``, decode each value as UTF-8 and build the list the spout emits
  (key, value, topic, partition, offset, timestamp);
- squall: bench/topologies/kafka_tally.py on the local cluster (KafkaSpout par 1 -> a bolt that counts,
  two processes and a stream manager), at ATMOST_ONCE and at EFFECTIVELY_ONCE (a checkpoint a second).

Files: ``--rows`` rows of four columns (int, string, float, float).

- baseline: pyarrow alone writing the same rows as Parquet files of 100,000 rows (columns built from
  the row lists, as a sink gets them);
- squall: bench/topologies/rows_files.py (a spout of prebuilt rows -> FileSink par 1, Parquet, a part
  committed every 0.5 s) at ATMOST_ONCE; and rows_tally.py, the same spout into a bolt that only counts,
  in a process of its own as the sink is (not chained): what the pipeline carries without the sink, its
  ceiling.

Every rate is taken between 10 % and 90 % of the total (the counting bolt notes when it passes each mark;
rows in committed Parquet files are polled, their commits 0.5 s apart), so start-up and the tail do not
count; each round runs the baseline again, and the
ratios are to the round's own baseline (this machine's figures drift from minute to minute).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Callable, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
TOPOLOGIES = os.path.join(HERE, "topologies")
sys.path.insert(0, TOPOLOGIES)

from bench_components import ROW_FIELDS, row  # noqa: E402

TOPIC = "bench"


# ------------------------------------------------------------------ measuring a count that grows
def crossing_rate(progress: Callable[[], tuple], total: int, timeout: float = 300.0) -> float:
    """Units per second between the first reports past 10 % and past 90 % of ``total``; ``progress()`` is
    (count, the time it was counted at), polled every 20 ms."""
    low, high = total // 10, total * 9 // 10
    first: Optional[tuple] = None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        n, at = progress()
        if first is None and n >= low:
            first = (n, at)
        if first is not None and n >= high:
            if at <= first[1] or n == first[0]:
                raise RuntimeError(f"{total:,} went by between two reports: give a larger total")
            return (n - first[0]) / (at - first[1])
        time.sleep(0.02)
    raise TimeoutError(f"only {progress()[0]} of {total} within {timeout:.0f} s")


# ------------------------------------------------------------------ Kafka
def fill_topic(bootstrap: str, records: int) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50, "batch.num.messages": 10000})
    value = "x" * 60
    for i in range(records):
        while True:
            try:
                producer.produce(TOPIC, key=f"key-{i % 10000:06d}", value=f"{i:>4}{value}"[:64],
                                 partition=i % 4)
                break
            except BufferError:
                producer.poll(0.05)
        if i % 10000 == 0:
            producer.poll(0)
    if producer.flush(120):
        raise RuntimeError("the bench topic was not filled")


def bare_consumer(bootstrap: str, records: int) -> float:
    """Records/s of a bare consumer loop doing the spout's per-record work."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{time.time()}",
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(TOPIC, p, OFFSET_BEGINNING) for p in range(4)])
    seen = 0
    low, high = records // 10, records * 9 // 10
    t_low = n_low = None
    try:
        while seen < high:
            batch = consumer.consume(1000, 0.1)
            out = []
            for m in batch:
                if m.error() is not None:
                    continue
                raw_key, raw = m.key(), m.value()
                out.append([raw_key.decode(), raw.decode("utf-8"), m.topic(), m.partition(), m.offset(),
                            m.timestamp()[1]])
            seen += len(out)
            if t_low is None and seen >= low:
                t_low, n_low = time.monotonic(), seen
        return (seen - n_low) / (time.monotonic() - t_low)
    finally:
        consumer.close()


class LocalRun:
    """One topology file on a fresh local cluster (its own SQUALL_HOME)."""

    def __init__(self, topology: str, *props: str):
        self.home = tempfile.mkdtemp(prefix="squall-connectors-")
        self.out = os.path.join(self.home, "out")
        os.makedirs(self.out)
        self.env = dict(os.environ, SQUALL_HOME=self.home)
        self.name = os.path.splitext(topology)[0]
        args = ["submit", os.path.join(TOPOLOGIES, topology), "--config-property", f"bench.out.dir={self.out}"]
        for p in props:  # "{out}" stands for this run's output directory
            args += ["--config-property", p.replace("{out}", self.out)]
        self.squall(*args)

    def squall(self, *args: str) -> str:
        return subprocess.run([sys.executable, "-m", "squall.cli", *args], env=self.env, check=True,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout

    def tallied_rate(self, timeout: float = 300.0) -> float:
        """Units per second the counting bolt saw between its 10 % and 90 % marks (it notes when it
        passes each, to the tuple)."""
        path = os.path.join(self.out, "tally.json")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                with open(path) as f:
                    marks = sorted(json.load(f).values())
            except (OSError, ValueError):
                marks = []
            if len(marks) == 2:
                (n10, t10), (n90, t90) = marks
                return (n90 - n10) / (t90 - t10)
            time.sleep(0.05)
        raise TimeoutError(f"the counting bolt did not pass 90 % within {timeout:.0f} s")

    def close(self) -> None:
        try:
            self.squall("kill", self.name)
        finally:
            shutil.rmtree(self.home, ignore_errors=True)


def squall_kafka(bootstrap: str, records: int, mode: str) -> float:
    run = LocalRun("kafka_tally.py", f"kafka.bootstrap.servers={bootstrap}", f"kafka.topics={TOPIC}",
                   f"kafka.group.id=bench-{time.time()}", f"topology.reliability.mode={mode}",
                   f"bench.total={records}")
    try:
        return run.tallied_rate()
    finally:
        run.close()


# ------------------------------------------------------------------ files
def committed_rows(out: str) -> tuple:
    """(rows in committed Parquet parts, now)."""
    import pyarrow.parquet as pq

    total = 0
    for folder, dirs, files in os.walk(out):
        dirs[:] = [d for d in dirs if not d.startswith((".", "_"))]
        for name in files:
            if name.endswith(".parquet") and not name.startswith((".", "_")):
                try:
                    total += pq.ParquetFile(os.path.join(folder, name)).metadata.num_rows
                except OSError:
                    pass
    return total, time.time()


def pyarrow_alone(rows: int, per_file: int = 100_000) -> float:
    """Rows/s of pyarrow writing the rows as Parquet files, columns built from row lists."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = [row(i) for i in range(min(rows, 100_000))]
    out = tempfile.mkdtemp(prefix="pyarrow-alone-")
    try:
        written, start, k = 0, time.monotonic(), 0
        while written < rows:
            n = min(per_file, rows - written)
            chunk = (table * (n // len(table) + 1))[:n] if n > len(table) else table[:n]
            columns = list(zip(*chunk))
            pq.write_table(pa.table({f: list(c) for f, c in zip(ROW_FIELDS, columns)}),
                           os.path.join(out, f"part-{k:05d}.parquet"))
            written, k = written + n, k + 1
        return written / (time.monotonic() - start)
    finally:
        shutil.rmtree(out, ignore_errors=True)


def squall_files(rows: int) -> float:
    run = LocalRun("rows_files.py", f"bench.rows={rows}", "files.path={out}/files", "files.format=parquet",
                   "files.roll.interval.secs=0.5")
    try:
        return crossing_rate(lambda: committed_rows(os.path.join(run.out, "files")), rows)
    finally:
        run.close()


def squall_rows(rows: int) -> float:
    run = LocalRun("rows_tally.py", f"bench.rows={rows}", f"bench.total={rows}")
    try:
        return run.tallied_rate()
    finally:
        run.close()


# ------------------------------------------------------------------ main
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    from squall.testing.kafka import MockKafkaCluster

    results: dict = {}

    def note(name: str, value: float, base: Optional[str] = None) -> None:
        results.setdefault(name, []).append(value)
        ratio = f"  ({value / results[base][-1]:.2f}x {base})" if base else ""
        print(f"  {name:34} {value:>12,.0f}/s{ratio}", flush=True)

    with MockKafkaCluster() as bootstrap:
        print(f"filling a 4-partition topic with {args.records:,} records ...", flush=True)
        fill_topic(bootstrap, args.records)
        for r in range(args.rounds):
            print(f"round {r + 1}: Kafka records/s", flush=True)
            note("bare consumer loop", bare_consumer(bootstrap, args.records))
            note("KafkaSpout -> bolt, ATMOST_ONCE", squall_kafka(bootstrap, args.records, "ATMOST_ONCE"),
                 "bare consumer loop")
            note("KafkaSpout -> bolt, EFFECTIVELY_ONCE", squall_kafka(bootstrap, args.records, "EFFECTIVELY_ONCE"),
                 "bare consumer loop")
    for r in range(args.rounds):
        print(f"round {r + 1}: file rows/s", flush=True)
        note("pyarrow alone", pyarrow_alone(args.rows))
        note("spout -> FileSink (committed)", squall_files(args.rows), "pyarrow alone")
        note("spout -> counting bolt (ceiling)", squall_rows(args.rows), "pyarrow alone")
    print("\nmedians over rounds, and the median of each round's ratio:")
    pairs = {"KafkaSpout -> bolt, ATMOST_ONCE": "bare consumer loop",
             "KafkaSpout -> bolt, EFFECTIVELY_ONCE": "bare consumer loop",
             "spout -> FileSink (committed)": "pyarrow alone", "spout -> counting bolt (ceiling)": "pyarrow alone"}
    for name, values in results.items():
        base = pairs.get(name)
        ratio = "" if base is None else \
            f"  {statistics.median(v / b for v, b in zip(values, results[base])):.2f}x {base}"
        print(f"  {name:34} {statistics.median(values):>12,.0f}/s{ratio}")


if __name__ == "__main__":
    main()
