"""The capacity report's source partitions, on a real local Spark session, from rows written here.

A source spout ``kafka`` (tasks 1 and 2, par 2) reads three partitions: ``events-0`` (task 1) whose lag grows
by 50 records a 5 s bucket, ``events-1`` (task 2) whose lag falls from 1,200 by 100 a bucket, and
``events-2`` (task 1, then task 2 from bucket 6: a rescale) at lag 0. Every figure expected is worked out
here by hand.
"""
from __future__ import annotations

import json
import os

import pytest

from squall.metrics import SOURCE_PARTITIONS
from squall.reports import sources
from squall.reports.capacity_report import CapacityOptions, capacity_report
from squall.reports.synthetic import SyntheticComponent as C
from squall.reports.synthetic import SyntheticRun, write_run

# task ids by component name: kafka 1-2, sink 3
RUN = SyntheticRun("kafka_run", (C("kafka", "spout", 2, rate=1000.0, capacity=5000.0),
                                 C("sink", "bolt", 1, rate=1000.0, capacity=2000.0)), buckets=12, containers=1)


def reported(task_id, k):
    """What task ``task_id`` reports in bucket ``k`` (5 s buckets)."""
    out = {}
    if task_id == 1:
        out["events-0"] = {"lag": 100 + 50 * k, "records_per_sec": 20.0, "bytes_per_sec": 2000.0}
    if task_id == 2:
        out["events-1"] = {"lag": 1200 - 100 * k, "records_per_sec": 40.0, "bytes_per_sec": 4000.0}
    if (task_id == 1) == (k < 6):
        out["events-2"] = {"lag": 0, "records_per_sec": 10.0, "bytes_per_sec": 1000.0}
    return out


@pytest.fixture(scope="module")
def report(spark, tmp_path_factory):
    run_dir = write_run(str(tmp_path_factory.mktemp("sources")), RUN, check=True)
    path = os.path.join(run_dir, "metrics", "container-1.jsonl")
    with open(path) as f:
        rows = [json.loads(line) for line in f]
    first = min(r["ts"] for r in rows)
    for row in rows:
        if row["process"] == "instance" and row["component"] == "kafka":
            row["user"] = {SOURCE_PARTITIONS: reported(row["task_id"], round((row["ts"] - first) / 5.0))}
    with open(path, "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)
    return capacity_report(CapacityOptions(metrics=run_dir, charts=False), spark)


def test_each_partition_has_its_lag_over_the_run_and_what_was_read(report):
    table = next(t for t in report.tables if t.name == "sources")
    rows = {r["partition"]: r for r in table.rows}
    assert set(rows) == {"events-0", "events-1", "events-2"} and {r["component"] for r in table.rows} == {"kafka"}
    grows, falls, idle = rows["events-0"], rows["events-1"], rows["events-2"]
    assert (grows["lag_first"], grows["lag_last"], grows["lag_max"], grows["reports"]) == (100, 650, 650, 12)
    assert grows["lag_growth_per_sec"] == pytest.approx(550 / 55.0)
    assert grows["catch_up_secs"] is None and grows["records_per_sec"] == 20.0 and grows["bytes_per_sec"] == 2000.0
    assert (falls["lag_first"], falls["lag_last"]) == (1200, 100)
    assert falls["lag_growth_per_sec"] == pytest.approx(-20.0)
    assert falls["catch_up_secs"] == pytest.approx(5.0)
    assert (idle["lag_last"], idle["lag_growth_per_sec"], idle["records_per_sec"]) == (0, 0.0, 10.0)  # one task a bucket


def test_a_growing_lag_is_a_note_and_a_summary_line(report):
    assert "  source kafka: 3 partitions, 70.0 records/s read, lag 750 records at the end" in report.summary
    note = next(line for line in report.summary if line.startswith("  source note: "))
    assert "kafka: its lag grew by 0.0 records/s" not in note
    # 550/55 up and 1100/55 down: the total falls, so the component is catching up
    assert "kafka: catching up: its lag (750 records) falls by 10.0 records/s, gone in about 75 s" in note


def test_notes_name_a_component_whose_lag_grows():
    rows = [{"component": "kafka", "partition": "t-0", "lag_last": 5000, "lag_growth_per_sec": 80.0,
             "records_per_sec": 900.0}]
    (note,) = sources.notes(rows)
    assert note.startswith("kafka: its lag grew by 80.0 records/s over the run (now 5,000 records over 1 "
                           "partitions) while it read 900.0 records/s")
    assert sources.notes([dict(rows[0], lag_growth_per_sec=5.0)]) == []  # under 1 % of what it reads
