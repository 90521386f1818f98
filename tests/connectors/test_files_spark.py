"""Spark reads what the FileSink commits, directly: ``spark.read.parquet(path)`` (and ``.json`` for JSON
Lines) sees the committed rows, with their partition columns and the types of their values, and skips
parts still in progress or pending. The test run's one local Spark session (tests/conftest.py)."""
import os

import pytest

from squall.component import TopologyContext, Tuple
from squall.connectors.files import FileSink
from squall.stateful import KeyValueState


def sink_at(path, fmt):
    config = {"files.path": str(path), "files.format": fmt, "files.partition.by": "day",
              "topology.reliability.mode": "EFFECTIVELY_ONCE", "squall.state.key.groups": 128}
    FileSink.check_config(config)
    sink = FileSink()
    sink.initialize(config, TopologyContext("t", 1, "sink", {"sink": [1]}, config))
    sink.init_state(KeyValueState())
    return sink


FIELDS = ("n", "price", "name", "ok", "note", "day")


def feed(sink, numbers):
    for n in numbers:
        values = [n, n / 4, f"item {n}", n % 3 == 0, None if n % 2 else "even", f"2026-11-{20 + n % 3}"]
        sink.process(Tuple(None, "src", "default", 7, values, FIELDS))


@pytest.mark.parametrize("fmt", ["parquet", "jsonl"])
def test_spark_reads_the_committed_parts_only(spark, tmp_path, fmt):
    out = tmp_path / "out"
    sink = sink_at(out, fmt)
    feed(sink, range(30))
    sink.pre_save(1)
    sink.post_save(1)  # committed: 0..29
    feed(sink, range(30, 40))
    sink.pre_save(2)  # pending: hidden until checkpoint 2 completes
    feed(sink, range(40, 45))  # in progress: hidden
    sink.open[next(iter(sink.open))].writer.stream.flush()
    assert len([f for _, _, fs in os.walk(out) for f in fs if f.startswith(".")]) >= 3 + 3

    reader = spark.read.parquet if fmt == "parquet" else spark.read.json
    df = reader(str(out))
    rows = sorted(df.collect(), key=lambda r: r["n"])
    assert [r["n"] for r in rows] == list(range(30))
    r = rows[5]
    assert (r["price"], r["name"], r["ok"], r["note"], str(r["day"])) == (1.25, "item 5", False, None, "2026-11-22")
    if fmt == "parquet":
        types = dict(df.dtypes)
        assert (types["n"], types["price"], types["name"], types["ok"]) == ("bigint", "double", "string", "boolean")
    assert sorted(str(p.day) for p in df.select("day").distinct().collect()) == [
        "2026-11-20", "2026-11-21", "2026-11-22"]  # the Hive folders
