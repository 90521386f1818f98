"""The capacity report's checkpoints, on a real local Spark session.

Two kinds of input:

- a real run (``data/stateful_count-20261125-145156``): tests/faults/topologies/stateful_count.py on
  the local cluster with 1 s metrics buckets and a 0.5 s checkpoint interval; the count bolt's task 1
  was SIGKILLed after 8 s (a rollback, and the checkpoint in flight abandoned) and the topology master
  after 16 s (a new term of leadership: its counters start again from 0, and it rolls every task back);
  the run's rows as container 0-2's metrics managers wrote them;
- rows written here in the same format, for what that run did not do: slow checkpoints, checkpoints
  abandoned by timeouts, a standby topology master's rows, a run without container 0's file.

Every expected figure is worked out from the rows in plain Python or by hand, never by the report's code.
"""
from __future__ import annotations

import csv
import glob
import gzip
import json
import os
import shutil

import pytest

from squall.reports import checkpoints
from squall.reports.capacity_report import CapacityOptions, capacity_report
from squall.reports.output import write_report
from squall.reports.synthetic import SyntheticComponent as C
from squall.reports.synthetic import SyntheticRun, write_run

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "stateful_count-20261125-145156")
KEYS = ("__checkpoint_saves", "__checkpoint_save_ms", "__checkpoint_align_ms", "__checkpoint_bytes",
        "__checkpoint_stale_frames")


def tables(report):
    return {t.name: t.rows for t in report.tables}


def by_component(rows):
    return {r["component"]: r for r in rows}


def read_rows(run_dir):
    out = []
    for path in sorted(glob.glob(os.path.join(run_dir, "metrics", "*.jsonl"))):
        with open(path) as f:
            out += [json.loads(line) for line in f if line.strip()]
    return out


def write_rows(run_dir, container, rows):
    with open(os.path.join(run_dir, "metrics", f"container-{container}.jsonl"), "w") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")


def unpack_real_run(root, strip=False):
    """The real run as ``<root>/stateful_count/<run_id>/``; ``strip``: without any checkpoint figure."""
    run_dir = os.path.join(str(root), "stateful_count", "20261125-145156")
    os.makedirs(os.path.join(run_dir, "metrics"))
    shutil.copy(os.path.join(DATA, "packing_plan.json"), run_dir)
    for path in sorted(glob.glob(os.path.join(DATA, "container-*.jsonl.gz"))):
        with gzip.open(path, "rt") as f:
            rows = [json.loads(line) for line in f]
        if strip:
            for r in rows:
                for key in KEYS + ("checkpoints",):
                    r["user"].pop(key, None)
        write_rows(run_dir, os.path.basename(path)[len("container-"):-len(".jsonl.gz")], rows)
    return run_dir


def components_from_rows(rows):
    """Each component's figures, straight from its tasks' rows (docs/reports.md, "Checkpoints")."""
    tasks = {}
    for r in rows:
        if r["process"] == "instance" and "__checkpoint_saves" in r["user"]:
            tasks.setdefault(r["component"], {}).setdefault(r["task_id"], []).append(r["user"])
    out = {}
    for component, per_task in tasks.items():
        every = [u for users in per_task.values() for u in users]
        saves = sum(u["__checkpoint_saves"] for u in every)
        saved = sum(u["__checkpoint_bytes"] for u in every)
        out[component] = {
            "tasks": len(per_task),
            "saves": saves,
            "save_ms_mean": sum(u["__checkpoint_save_ms"] for u in every) / saves,
            "align_ms_max": max(u["__checkpoint_align_ms"] for u in every),
            "bytes_per_save_mean": saved / saves,
            "bytes_per_checkpoint": sum(sum(u["__checkpoint_bytes"] for u in users)
                                        / sum(u["__checkpoint_saves"] for u in users)
                                        for users in per_task.values()),
            "stale_frames": sum(u["__checkpoint_stale_frames"] for u in every),
        }
    return out


# ---------------------------------------------------------------------------- the real run


@pytest.fixture(scope="module")
def real_run(tmp_path_factory):
    return unpack_real_run(tmp_path_factory.mktemp("real"))


@pytest.fixture(scope="module")
def real_report(spark, real_run):
    return capacity_report(CapacityOptions(metrics=real_run, charts=False), spark)


def test_real_run_per_component_figures(real_report, real_run):
    rows = read_rows(real_run)
    want = components_from_rows(rows)
    got = by_component(tables(real_report)["checkpoint_components"])
    assert sorted(got) == ["count", "sentences", "split"]
    assert {c: got[c]["kind"] for c in got} == {"count": "bolt", "sentences": "spout", "split": "bolt"}
    for component, figures in want.items():
        for key, value in figures.items():
            assert got[component][key] == pytest.approx(value), (component, key)
    # Known answers: every save of a task wrote the same bytes (the count bolt's 500 words were all seen
    # within the first second; a spout's state is its position); split is stateless.
    sizes = {}
    for r in rows:
        u = r["user"]
        if r["process"] == "instance" and u.get("__checkpoint_saves"):
            assert u["__checkpoint_bytes"] % u["__checkpoint_saves"] == 0
            sizes.setdefault(r["component"], {}).setdefault(r["task_id"], set()).add(
                u["__checkpoint_bytes"] // u["__checkpoint_saves"])
    assert sizes == {"count": {1: {2453}, 2: {2443}}, "sentences": {3: {13}, 4: {13}}, "split": {5: {0}, 6: {0}}}
    assert got["count"]["bytes_per_checkpoint"] == 2453 + 2443
    assert got["sentences"]["bytes_per_checkpoint"] == 13 + 13
    assert got["split"]["bytes_per_checkpoint"] == 0
    assert got["sentences"]["align_ms_max"] == 0.0  # spouts save at START, they never align
    assert got["count"]["stale_frames"] == 248  # the restarted count task dropped the old epoch's frames


def test_real_run_topology_figures_add_up_the_two_terms(real_report, real_run):
    row = tables(real_report)["checkpoints"][0]
    leading = [r for r in read_rows(real_run) if r["process"] == "tmaster" and r["user"]["leading"]]
    leading.sort(key=lambda r: r["ts"])
    figures = [r["user"]["checkpoints"] for r in leading]
    # The topology master was killed between the rows at index 17 and 18: its successor counts from 0.
    assert [f["completed"] for f in figures[17:19]] == [31, 1]
    term1, term2 = figures[17], figures[-1]
    assert (term1["completed"], term1["failed"], term1["restores"]) == (31, 1, 2)  # the start, the bolt's kill
    assert (term2["completed"], term2["failed"], term2["restores"]) == (19, 0, 1)  # its own start
    assert (row["completed"], row["abandoned"], row["restores"], row["tmaster_terms"]) == (50, 1, 3, 2)
    assert (row["mode"], row["interval_secs"]) == ("EFFECTIVELY_ONCE", 0.5)
    sampled = {f["last_id"]: f for f in figures if f["last_id"] is not None}
    last = sampled[max(sampled)]
    assert row["last_id"] == max(sampled) == 52
    assert (row["last_duration_ms"], row["last_bytes"], row["last_align_ms"]) == (
        last["duration_ms"], last["bytes"], last["align_ms"])
    assert row["last_restore_ms"] == figures[-1]["last_restore_ms"]
    assert row["sampled"] == len(sampled)
    assert row["duration_ms_mean"] == pytest.approx(sum(f["duration_ms"] for f in sampled.values()) / len(sampled))
    assert row["duration_ms_max"] == max(f["duration_ms"] for f in sampled.values())
    assert row["align_ms_mean"] == pytest.approx(sum(f["align_ms"] for f in sampled.values()) / len(sampled))
    assert row["align_ms_max"] == max(f["align_ms"] for f in sampled.values())
    # The components' state per checkpoint adds up to what the topology master recorded per checkpoint.
    components = tables(real_report)["checkpoint_components"]
    assert sum(c["bytes_per_checkpoint"] for c in components) == row["last_bytes"] == row["bytes_mean"] == 4922


def test_real_run_note_and_summary(real_report):
    row = tables(real_report)["checkpoints"][0]
    # 1 abandoned, 1 rollback after a failure (3 restores, 2 of them the terms' starts): no timeout.
    assert row["notes"] == ("1 of 51 checkpoints abandoned, no more than the rollbacks after a failure (1): a "
                            "restart or an update abandons the checkpoint in flight, so see the topology's logs "
                            "for why processes restarted")
    lines = [line for line in real_report.summary if "checkpoint" in line]
    assert lines == [
        f"  checkpoints (EFFECTIVELY_ONCE, every 0.5 s): 50 complete, 1 abandoned, 3 restores; last #52: 4.8 KiB "
        f"in {row['last_duration_ms']:,.0f} ms, alignment {row['last_align_ms']:.1f} ms; mean "
        f"{row['duration_ms_mean']:,.0f} ms (26 sampled)",
        "  checkpoint note: " + row["notes"],
    ]
    assert real_report.summary[-2:] == lines
    names = [t.name for t in real_report.tables]
    assert names.index("checkpoints") + 1 == names.index("checkpoint_components") == names.index("hosts") - 1


def test_real_run_files(real_report, tmp_path):
    paths = write_report(real_report, str(tmp_path / "out"))
    data = json.load(open(paths["json"]))
    assert data["tables"]["checkpoints"][0]["completed"] == 50
    assert {r["component"]: r["saves"] for r in data["tables"]["checkpoint_components"]} == {
        "count": 101, "sentences": 104, "split": 104}
    with open(os.path.join(paths["tables"], "checkpoint_components.csv")) as f:
        assert next(csv.DictReader(f))["bytes_per_checkpoint"] == "4896.0"
    html = open(paths["html"]).read()
    assert "<h2>Checkpoints</h2>" in html and "<h2>Checkpoints per component</h2>" in html


def test_without_checkpoints_the_report_is_what_it_was(spark, real_report, tmp_path):
    """The same rows without a checkpoint figure (a topology that does not checkpoint): the same
    report, less the checkpoint tables and lines."""
    stripped = capacity_report(CapacityOptions(metrics=unpack_real_run(tmp_path, strip=True), charts=False), spark)
    assert [t.name for t in stripped.tables] == ["recommendations", "components", "plans", "current_plan", "hosts",
                                                 "instances", "malformed"]
    assert [t.name for t in real_report.tables if not t.name.startswith("checkpoint")] == [
        t.name for t in stripped.tables]
    for table in stripped.tables:
        assert table.rows == tables(real_report)[table.name], table.name
        assert table.note == {t.name: t.note for t in real_report.tables}[table.name]
    assert stripped.summary == [line for line in real_report.summary if "checkpoint" not in line]
    assert [f for f in stripped.facts if f[0] != "metrics"] == [f for f in real_report.facts if f[0] != "metrics"]
    assert stripped.data == real_report.data
    assert not any("checkpoint" in line for line in stripped.summary)


# ---------------------------------------------------------------------------- rows written here

# Task ids by component name: src 1, work 2-3. Twelve 5 s buckets, a checkpoint every second.
SLOW = SyntheticRun("slow_ckpt", (C("src", "spout", 1, rate=1000.0, capacity=5000.0),
                                  C("work", "bolt", 2, rate=1000.0, capacity=2000.0)), buckets=12, containers=2)

# The leading topology master's (completed, failed, restores, last_id, duration_ms, align_ms,
# last_restore_ms) per bucket: a first term, then (bucket 6) a new one that counts from 0 again.
MASTER = [
    (0, 0, 1, None, None, None, 80.0),
    (3, 1, 1, 4, 800.0, 700.0, 80.0),
    (6, 2, 1, 8, 900.0, 650.0, 80.0),
    (9, 2, 1, 11, 700.0, 600.0, 80.0),
    (9, 2, 1, 11, 700.0, 600.0, 80.0),
    (12, 2, 1, 14, 1000.0, 800.0, 80.0),
    (2, 0, 1, 17, 600.0, 400.0, None),
    (5, 1, 1, 21, 800.0, 700.0, 120.0),
    (8, 1, 1, 24, 700.0, 500.0, 120.0),
    (8, 1, 2, 24, 700.0, 500.0, 250.0),
    (11, 2, 2, 28, 900.0, 700.0, 250.0),
    (14, 2, 2, 31, 800.0, 600.0, 250.0),
]


def instance_figures(task_id, k):
    """src saves 2 ms and 100 B a checkpoint; work's task 2 4 ms, 1,000 B, aligning 600 + 10 k ms; its task 3
    (up from the second bucket) 6 ms, 3,000 B, aligning 300 ms; 7 and 5 stale frames in bucket 6."""
    if task_id == 3 and k == 0:
        return dict.fromkeys(KEYS, 0)
    per_save, size, align, stale = {1: (2.0, 100, 0.0, 0), 2: (4.0, 1000, 600.0 + 10 * k, 7),
                                    3: (6.0, 3000, 300.0, 5)}[task_id]
    return {"__checkpoint_saves": 5, "__checkpoint_save_ms": 5 * per_save, "__checkpoint_align_ms": align,
            "__checkpoint_bytes": 5 * size, "__checkpoint_stale_frames": stale if k == 6 else 0}


def master_figures(k):
    completed, failed, restores, last_id, duration, align, restore_ms = MASTER[k]
    return {"mode": "EFFECTIVELY_ONCE", "interval_secs": 1.0, "completed": completed, "failed": failed,
            "restores": restores, "last_restore_ms": restore_ms, "last_id": last_id, "duration_ms": duration,
            "bytes": 4100 if last_id else None, "align_ms": align}


@pytest.fixture(scope="module")
def slow_run(tmp_path_factory):
    run_dir = write_run(str(tmp_path_factory.mktemp("slow")), SLOW, check=True)
    for container in (1, 2):
        rows = read_rows_of(run_dir, container)
        out = []
        for row in rows:
            k = round((row["ts"] - rows[0]["ts"]) / SLOW.interval_secs)
            if row["process"] == "instance":
                row["user"] = instance_figures(row["task_id"], k)
            elif row["process"] == "tmaster":
                row["user"] = {"stmgrs": 2, "leading": True, "checkpoints": master_figures(k)}
                # A standby that led once keeps reporting its old term's figures: never counted.
                standby = dict(row, ts=row["ts"] + 0.5, user={"stmgrs": 0, "leading": False, "checkpoints": {
                    **master_figures(5), "completed": 100 - k, "failed": 50, "restores": 9, "last_id": 90 + k,
                    "duration_ms": 99999.0}})
                out.append(row)
                row = standby
            out.append(row)
        write_rows(run_dir, container, out)
    return run_dir


def read_rows_of(run_dir, container):
    with open(os.path.join(run_dir, "metrics", f"container-{container}.jsonl")) as f:
        return [json.loads(line) for line in f]


@pytest.fixture(scope="module")
def slow_report(spark, slow_run):
    return capacity_report(CapacityOptions(metrics=slow_run, charts=False), spark)


def test_written_rows_per_component(slow_report, slow_run):
    got = by_component(tables(slow_report)["checkpoint_components"])
    src, work = got["src"], got["work"]
    assert (src["tasks"], src["saves"], src["align_ms_max"], src["stale_frames"]) == (1, 60, 0.0, 0)
    assert src["save_ms_mean"] == pytest.approx(2.0)
    assert src["bytes_per_save_mean"] == src["bytes_per_checkpoint"] == pytest.approx(100.0)
    # work: task 2 saved 5 in each of 12 buckets, task 3 in 11; 20 ms and 30 ms of saving per bucket.
    assert (work["tasks"], work["saves"], work["stale_frames"]) == (2, 115, 12)
    assert work["save_ms_mean"] == pytest.approx((12 * 20 + 11 * 30) / 115)
    assert work["align_ms_max"] == 710.0  # task 2 in the last bucket
    assert work["bytes_per_save_mean"] == pytest.approx((12 * 5000 + 11 * 15000) / 115)
    assert work["bytes_per_checkpoint"] == pytest.approx(1000 + 3000)
    assert components_from_rows(read_rows(slow_run)) == {
        c: {k: pytest.approx(v) for k, v in got[c].items() if k not in ("component", "kind")} for c in got}


def test_written_rows_topology_and_notes(slow_report):
    row = tables(slow_report)["checkpoints"][0]
    # Term 1 ends at (12, 2, 1), term 2 at (14, 2, 2); the standby's rows are left out.
    assert (row["completed"], row["abandoned"], row["restores"], row["tmaster_terms"]) == (26, 4, 3, 2)
    assert (row["last_id"], row["last_duration_ms"], row["last_bytes"], row["last_align_ms"]) == (31, 800.0, 4100,
                                                                                                  600.0)
    assert row["last_restore_ms"] == 250.0
    # Ids 4, 8, 11, 14, 17, 21, 24, 28, 31, each once.
    assert row["sampled"] == 9
    assert row["duration_ms_mean"] == pytest.approx(7200 / 9)
    assert row["duration_ms_max"] == 1000.0
    assert row["align_ms_mean"] == pytest.approx(5650 / 9)
    assert row["bytes_mean"] == 4100.0
    # 800 ms > half of 1 s: raise to 2 × 800 ms = 1.6 s. Alignment (628 ms) outweighs saving (2 + 4.96 ms).
    # 4 abandoned, 3 restores in 2 terms: 1 rollback after a failure explains 1; 3 timed out.
    assert row["notes"].split("; ") == [
        "checkpoints take 800 ms on average (9 sampled), more than half the 1 s interval: raise "
        "topology.state.checkpoint.interval.secs to 1.6 s or more, or make them shorter: most of it is alignment "
        "(628 ms on average, work up to 710 ms): markers wait behind the tuples queued at the aligning tasks, so "
        "give their component or what feeds it more capacity (recommendations)",
        "4 of 30 checkpoints abandoned, 3 more than the rollbacks after a failure (1) explain: they were not "
        "complete within squall.state.checkpoint.timeout.secs (a task holding more than "
        "squall.state.alignment.buffer.mb for an alignment never completes one, its log says so): relieve the "
        "slow component, or raise those",
    ]
    assert slow_report.summary[-3:] == [
        "  checkpoints (EFFECTIVELY_ONCE, every 1 s): 26 complete, 4 abandoned, 3 restores; last #31: 4.0 KiB in "
        "800 ms, alignment 600.0 ms; mean 800 ms (9 sampled)",
    ] + ["  checkpoint note: " + n for n in row["notes"].split("; ")]


def test_without_the_topology_masters_rows(spark, slow_run, tmp_path):
    run_dir = tmp_path / "slow_ckpt" / "run"
    shutil.copytree(slow_run, run_dir)
    for container in (1, 2):
        write_rows(str(run_dir), container,
                   [r for r in read_rows_of(str(run_dir), container) if r["process"] != "tmaster"])
    report = capacity_report(CapacityOptions(metrics=str(run_dir), charts=False), spark)
    row = tables(report)["checkpoints"][0]
    assert {k for k, v in row.items() if v is not None} == {"notes"}
    assert row["notes"] == ("no topology master rows with checkpoint figures (container 0's metrics file was not "
                            "read): topology-wide figures unknown")
    assert report.summary[-1] == "  checkpoints: " + row["notes"]
    assert by_component(tables(report)["checkpoint_components"])["work"]["bytes_per_checkpoint"] == pytest.approx(
        4000.0)


# ---------------------------------------------------------------------------- notes alone (no Spark)


def topology(**figures):
    row = {"interval_secs": 1.0, "completed": 10, "abandoned": 0, "restores": 1, "tmaster_terms": 1,
           "sampled": 4, "duration_ms_mean": 100.0, "align_ms_mean": 10.0}
    row.update(figures)
    return row


def component(name, save_ms, align_ms, size):
    return {"component": name, "save_ms_mean": save_ms, "align_ms_max": align_ms, "bytes_per_save_mean": size}


def test_quick_checkpoints_that_complete_need_no_note():
    assert checkpoints.notes(topology(), [component("a", 1.0, 5.0, 10)]) == []


def test_slow_saving_names_the_component_with_the_slowest_save():
    found = checkpoints.notes(topology(duration_ms_mean=1200.0, align_ms_mean=50.0),
                              [component("small", 20.0, 50.0, 100), component("big", 700.0, 0.0, 3 * 1024 ** 2)])
    assert found == [
        "checkpoints take 1,200 ms on average (4 sampled), more than half the 1 s interval: raise "
        "topology.state.checkpoint.interval.secs to 2.4 s or more, or make them shorter: most of it is saving "
        "(720 ms over every component, big 700 ms a save of 3.0 MiB): keep less state, or write it to faster "
        "storage (squall.state.storage)"]


def test_slow_but_neither_saving_nor_alignment_points_at_queues():
    found = checkpoints.notes(topology(interval_secs=0.5, duration_ms_mean=400.0, align_ms_mean=60.0),
                              [component("a", 10.0, 60.0, 10)])
    assert found[0].endswith("make them shorter: neither alignment (60 ms) nor saving (10 ms over every component) "
                             "is most of it: markers wait behind tuples queued on their way, so relieve the "
                             "saturated components (recommendations)")


def test_no_checkpoint_completed():
    found = checkpoints.notes(topology(completed=0, abandoned=0, sampled=0, duration_ms_mean=None,
                                       align_ms_mean=None), [])
    assert found == ["no checkpoint completed in this run: a rollback goes back to the empty state (the logs of "
                     "the topology master say what the checkpoints waited for)"]


def test_slow_alignment_without_the_instances_rows_names_no_component():
    found = checkpoints.notes(topology(duration_ms_mean=900.0, align_ms_mean=800.0), [])
    assert found[0].endswith("make them shorter: most of it is alignment (800 ms on average): markers wait behind "
                             "the tuples queued at the aligning tasks, so give their component or what feeds it "
                             "more capacity (recommendations)")
