"""The file connectors on a real local cluster at EFFECTIVELY_ONCE, with SIGKILLs mid-run.

1. FileSpout over a directory where files keep arriving (written hidden, then renamed), into a stateful
   two-phase line count: a spout task is SIGKILLed mid-file; every file's committed count must equal its
   line count exactly (a line lost or counted twice shows).
2. A stateful spout of N numbered records into a FileSink (Parquet, partitioned): a sink task is
   SIGKILLed mid-run; pyarrow (as Spark, skipping hidden files) must read every n exactly once.
"""
import json
import os
import signal
from collections import Counter

import pyarrow.dataset as ds

HERE = os.path.dirname(os.path.abspath(__file__))
from squall.testing import wait_until  # noqa: E402
from squall.testing.sinks import committed_counts  # noqa: E402
from squall.testing.words import RATE_FILE_KEY, set_rate  # noqa: E402

TOPOLOGIES = os.path.join(HERE, "topologies")


def submit(cluster, name, *props):
    args = ["submit", os.path.join(TOPOLOGIES, f"{name}.py")]
    for p in props:
        args += ["--config-property", p]
    cluster.squall(*args)


def restores(cluster, topology):
    return json.loads(cluster.squall("metrics", topology, "--json")[0])["checkpoints"]["restores"]


def instance_pid(cluster, topology, component, nth=0):
    """The pid of a task of ``component``, once every one of its tasks runs (one may be restarting)."""
    def pids():
        processes = json.loads(cluster.squall("show", topology, "--json")[0])["processes"]
        found = [p["pid"] for p in processes if p["process"].startswith(f"instance {component}")]
        return sorted(found) if found and None not in found else None

    return wait_until(pids, timeout=30, what=f"every {component} task running")[nth]


# ------------------------------------------------------------------ 1: FileSpout
def write_file(folder, name, lines):
    tmp = os.path.join(folder, f".{name}.tmp")
    with open(tmp, "w") as f:
        f.writelines(f"{name} line {i}\n" for i in range(lines))
    os.replace(tmp, os.path.join(folder, name))


def committed(out):
    """Counts per file of the newest checkpoint every count task has committed."""
    return committed_counts(out)[1]


def test_file_spout_sigkilled_mid_file_counts_every_line_once(cluster, tmp_path):
    src, out = str(tmp_path / "in"), str(tmp_path / "out")
    os.mkdir(src)
    os.mkdir(out)
    want = Counter()
    for i in range(4):
        want[f"a{i}.txt"] = 3000 + 17 * i
        write_file(src, f"a{i}.txt", want[f"a{i}.txt"])
    with open(os.path.join(src, ".b0.txt.inprogress"), "w") as f:
        f.write("a file being written: never read\n")
    submit(cluster, "files_count", f"files.path={src}", f"testing.out.dir={out}")
    wait_until(lambda: sum(committed(out).values()) > 2000, timeout=60, what="2000 lines committed before the kill")

    os.kill(instance_pid(cluster, "files_count", "lines"), signal.SIGKILL)
    for i in range(4):  # files keep arriving, in a subfolder too
        want[f"more/b{i}.txt"] = 1000 + 3 * i
        os.makedirs(os.path.join(src, "more"), exist_ok=True)
        write_file(os.path.join(src, "more"), f"b{i}.txt", want[f"more/b{i}.txt"])
    total = sum(want.values())
    wait_until(lambda: sum(committed(out).values()) >= total, timeout=90, interval=0.5,
               what=f"all {total} lines committed (so far {sum(committed(out).values())})")
    counts = committed(out)
    assert restores(cluster, "files_count") >= 2  # the start, then the kill's rollback
    cluster.squall("kill", "files_count")
    wrong = {f: counts[f] - want[f] for f in set(counts) | set(want) if counts[f] != want[f]}
    assert not wrong, f"lines counted minus lines written, per file where they differ: {wrong}"


# ------------------------------------------------------------------ 2: FileSink
def visible_numbers(path):
    """Every ``n`` a reader sees: finished parts only (pyarrow, as Spark and Hadoop, skips hidden names)."""
    if not os.path.isdir(path):
        return []
    dataset = ds.dataset(path, format="parquet", partitioning="hive")
    if not dataset.files:  # partition folders holding only parts in progress: nothing visible yet
        return []
    return dataset.to_table(columns=["n"]).column("n").to_pylist()


def test_file_sink_sigkilled_mid_run_writes_every_record_once(cluster, tmp_path):
    """Two SIGKILLs of a sink task: one inside its commit (post_save, the checkpoint complete, its parts
    still pending: the restore must finish them), then one from outside, mid-run."""
    out, marker = str(tmp_path / "out"), str(tmp_path / "crashed-in-commit")
    records = 20000
    submit(cluster, "files_sink", f"files.path={out}", f"files_test.records={records}",
           f"files_test.crash.marker={marker}")
    wait_until(lambda: os.path.exists(marker), timeout=60, what="a sink task's crash in its commit")
    wait_until(lambda: restores(cluster, "files_sink") >= 2, timeout=60, what="the rollback after the crash")
    done = len(visible_numbers(out))
    wait_until(lambda: len(visible_numbers(out)) > done + 1000, timeout=60,
               what=f"1000 more records committed after the crash (so far {len(visible_numbers(out))})")

    os.kill(instance_pid(cluster, "files_sink", "sink"), signal.SIGKILL)
    wait_until(lambda: len(visible_numbers(out)) >= records, timeout=90, interval=0.5,
               what=f"all {records} records committed (so far {len(visible_numbers(out))})")
    assert restores(cluster, "files_sink") >= 3  # the start, then one per kill
    cluster.squall("kill", "files_sink")
    seen = Counter(visible_numbers(out))
    twice = {n: c for n, c in seen.items() if c > 1}
    assert not twice, f"records written more than once: {dict(list(twice.items())[:10])}"
    assert sorted(seen) == list(range(records))
    table = ds.dataset(out, format="parquet", partitioning="hive").to_table()
    assert all((n % 2 == 0) == (p == "even") for n, p in zip(table.column("n").to_pylist(),
                                                            table.column("parity").to_pylist()))
    leftovers = [f for _, _, fs in os.walk(out) for f in fs if f.startswith(".")]
    assert not leftovers, f"hidden part files left behind: {leftovers}"


# ------------------------------------------------------------------ rescales
def component_tasks(cluster, topology, component):
    plan = json.loads(cluster.squall("show", topology, "--json")[0])["packing_plan"]
    return sorted(i["task_id"] for c in plan["containers"] for i in c["instances"] if i["component"] == component)


def test_rescaling_the_file_spout_2_to_3_mid_run_counts_every_line_once(cluster, tmp_path):
    src, out = str(tmp_path / "in"), str(tmp_path / "out")
    os.mkdir(src)
    os.mkdir(out)
    want = Counter({f"c{i}.txt": 1500 + 11 * i for i in range(6)})
    for name, lines in want.items():
        write_file(src, name, lines)
    submit(cluster, "files_count", f"files.path={src}", f"testing.out.dir={out}")
    wait_until(lambda: sum(committed(out).values()) > 1500, timeout=60, what="1500 lines committed before the update")
    cluster.squall("update", "files_count", "--component-parallelism", "lines=3")
    assert len(component_tasks(cluster, "files_count", "lines")) == 3
    total = sum(want.values())
    wait_until(lambda: sum(committed(out).values()) >= total, timeout=90, interval=0.5,
               what=f"all {total} lines committed (so far {sum(committed(out).values())})")
    counts = committed(out)
    cluster.squall("kill", "files_count")
    wrong = {f: counts[f] - want[f] for f in set(counts) | set(want) if counts[f] != want[f]}
    assert not wrong, f"lines counted minus lines written, per file where they differ: {wrong}"


def test_rescaling_the_file_sink_2_to_3_mid_run_writes_every_record_once(cluster, tmp_path):
    out = str(tmp_path / "out")
    records = 12000  # at 2 x 500/s, 12 s of records: the update comes while most are still to come
    rate_file = str(tmp_path / "rate")
    submit(cluster, "files_sink", f"files.path={out}", f"files_test.records={records}", "files_test.rate=500",
           f"{RATE_FILE_KEY}={rate_file}")
    wait_until(lambda: len(visible_numbers(out)) > 3000, timeout=60, what="3000 records committed before the update")
    cluster.squall("update", "files_sink", "--component-parallelism", "sink=3")
    assert len(component_tasks(cluster, "files_sink", "sink")) == 3
    set_rate(rate_file, float("inf"))  # the rescale is done: the rest unpaced
    wait_until(lambda: len(visible_numbers(out)) >= records, timeout=90, interval=0.5,
               what=f"all {records} records committed (so far {len(visible_numbers(out))})")
    cluster.squall("kill", "files_sink")
    seen = Counter(visible_numbers(out))
    assert sorted(seen) == list(range(records)) and max(seen.values()) == 1
    writers = {f.split("-")[1] for _, _, fs in os.walk(out) for f in fs if f.startswith("part-")}
    assert writers == {"00000", "00001", "00002"}  # the third task wrote too


# ------------------------------------------------------------------ at least once, both connectors
def sink_numbers(path):
    """Every ``n`` in the committed JSON Lines parts (hidden ones skipped)."""
    found = []
    for folder, _, names in os.walk(path):
        for name in names:
            if not name.startswith("."):
                with open(os.path.join(folder, name)) as f:
                    found += [json.loads(line)["n"] for line in f]
    return found


def test_at_least_once_file_to_file_with_the_sink_sigkilled_loses_no_record(cluster, tmp_path):
    src, out = str(tmp_path / "in"), str(tmp_path / "out")
    os.mkdir(src)
    total = 0
    for f in range(6):
        tmp = os.path.join(src, f".r{f}.tmp")
        with open(tmp, "w") as fh:
            fh.writelines(json.dumps({"n": total + i}) + "\n" for i in range(2000))
        os.replace(tmp, os.path.join(src, f"r{f}.jsonl"))
        total += 2000
    cluster.squall("submit", os.path.join(TOPOLOGIES, "files_pipe.py"), "--config-property", f"files.path={src}",
                   "--config-property", f"files_test.out={out}")
    wait_until(lambda: len(sink_numbers(out)) > 2000, timeout=60, what="2000 records committed before the kill")
    os.kill(instance_pid(cluster, "files_pipe", "sink"), signal.SIGKILL)
    wait_until(lambda: set(sink_numbers(out)) >= set(range(total)), timeout=90, interval=0.5,
               what=f"every one of {total} records committed (so far {len(set(sink_numbers(out)))})")
    cluster.squall("kill", "files_pipe")


# ------------------------------------------------------------------ refused at submit
def test_submit_refuses_a_missing_spout_directory_and_an_unwritable_sink_path(cluster, tmp_path):
    missing = tmp_path / "missing"
    _, err = cluster.squall("submit", os.path.join(TOPOLOGIES, "files_count.py"), "--config-property",
                            f"files.path={missing}", "--config-property", f"testing.out.dir={tmp_path}", expect=2)
    assert "components.lines" in err and f"files.path {missing}: no such directory" in err
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    _, err = cluster.squall("submit", os.path.join(TOPOLOGIES, "files_sink.py"), "--dry-run", "--config-property",
                            f"files.path={blocker}/out", expect=2)
    assert "components.sink" in err and f"files.path {blocker}/out: cannot write there" in err
    assert not cluster.processes()
