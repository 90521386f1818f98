"""EFFECTIVELY_ONCE under faults and rescales: a stateful word count ends with every word counted once.

The count bolt is a two-phase sink (squall.testing.sinks.CommittedCounts in
tests/faults/topologies/stateful_count.py): its committed output is its state as of the newest complete
checkpoint, as ``committed_counts`` reads it. Kills mid-run (the count bolt, a stream manager, a whole
container) and rescales (2 -> 5 -> 3 count tasks) roll every task back to the last complete checkpoint;
the spouts resume from their saved positions. The final counts must equal plain Python's exactly: a
tuple counted twice or lost shows as a difference.
"""
import json
import os
import signal

from e2e_harness import wait_until
from squall.testing.words import expected

from squall.testing.sinks import OUT_KEY, committed_counts as committed
from squall.testing.words import RATE_FILE_KEY, set_rate

HERE = os.path.dirname(os.path.abspath(__file__))
SENTENCES = 8000
TOTAL_WORDS = sum(expected(SENTENCES).values())


def words_committed(out):
    return sum(committed(out)[1].values())


def show(cluster):
    return json.loads(cluster.squall("show", "stateful_count", "--json")[0])


def process(cluster, name, container=None):
    return next(p for p in show(cluster)["processes"]
                if p["process"].startswith(name) and (container is None or p["container"] == container))


def count_tasks(cluster):
    return sorted(i["task_id"] for c in show(cluster)["packing_plan"]["containers"] for i in c["instances"]
                  if i["component"] == "count")


def progress(out, beyond, what):
    """Committed output grows past ``beyond`` words: the topology is flowing again."""
    wait_until(lambda: words_committed(out) > beyond, timeout=90, interval=0.3,
               what=f"committed counts past {beyond} words ({what})")
    return words_committed(out)


def finish(cluster, out, tasks=None):
    set_rate(rate_file(out), float("inf"))  # the faults are over: the rest of the sentences unpaced
    wait_until(lambda: words_committed(out) >= TOTAL_WORDS and (tasks is None or len(count_tasks(cluster)) == tasks),
               timeout=120, interval=0.5,
               what=f"all {TOTAL_WORDS} words committed (so far {words_committed(out)})")
    checkpoint, counts = committed(out)
    figures = json.loads(cluster.squall("metrics", "stateful_count", "--json")[0])["checkpoints"]
    storage = os.path.join(cluster.run_dir("stateful_count"), "checkpoints", "stateful_count")
    assert len(os.listdir(storage)) <= 3  # the 2 kept and maybe one under way: older ones are deleted
    cluster.squall("kill", "stateful_count")
    assert not os.path.exists(storage)  # kill deletes them
    want = expected(SENTENCES)
    wrong = {w: counts[w] - want[w] for w in set(counts) | set(want) if counts[w] != want[w]}
    assert not wrong, f"checkpoint {checkpoint}: counted minus expected, where they differ: {dict(list(wrong.items())[:10])}"
    return figures


def rate_file(out):
    return os.path.join(os.path.dirname(out), "rate")


def submit(cluster, out, *props):
    args = ["submit", os.path.join(HERE, "topologies", "stateful_count.py"),
            "--config-property", f"{OUT_KEY}={out}", "--config-property", f"testing.sentences={SENTENCES}",
            "--config-property", f"{RATE_FILE_KEY}={rate_file(out)}"]
    for p in props:
        args += ["--config-property", p]
    cluster.squall(*args)


def test_sigkills_of_a_bolt_a_stream_manager_and_a_container_leave_exact_counts(cluster, tmp_path):
    """On the local state manager; the rescale below runs on ZooKeeper's."""
    out = str(tmp_path / "out")
    os.mkdir(out)
    submit(cluster, out)
    done = progress(out, TOTAL_WORDS // 10, "before any kill")

    os.kill(process(cluster, "instance count", container=1)["pid"], signal.SIGKILL)
    done = progress(out, done, "after the count bolt's SIGKILL")

    os.kill(process(cluster, "stmgr", container=2)["pid"], signal.SIGKILL)
    done = progress(out, done, "after a stream manager's SIGKILL")

    executor = process(cluster, "executor", container=1)["pid"]
    os.killpg(os.getpgid(executor), signal.SIGKILL)  # the executor and every process it runs
    progress(out, done, "after container 1's SIGKILL")

    figures = finish(cluster, out)
    assert figures["restores"] >= 4, figures  # the start, then one per kill at least


def test_rescaling_the_stateful_bolt_2_to_5_to_3_leaves_exact_counts(zk_cluster, tmp_path):
    """On ZooKeeper's state manager (its checkpoint records and the plan's update through it)."""
    cluster, out = zk_cluster, str(tmp_path / "out")
    os.mkdir(out)
    submit(cluster, out, "testing.rate=200")
    done = progress(out, TOTAL_WORDS // 10, "before the rescale")

    cluster.squall("update", "stateful_count", "--component-parallelism", "count=5")
    assert len(count_tasks(cluster)) == 5
    done = progress(out, done, "with 5 count tasks")

    cluster.squall("update", "stateful_count", "--component-parallelism", "count=3")
    assert len(count_tasks(cluster)) == 3
    progress(out, done, "with 3 count tasks")
    finish(cluster, out, tasks=3)


def test_at_least_once_a_stateful_bolt_rolled_back_loses_no_count(cluster, tmp_path):
    """Storm's stateful bolts: state committed at checkpoints, acks held until then. After the count bolt's
    SIGKILL its state rolls back to the last complete checkpoint and the spouts replay every tuple whose
    ack it held: every word is counted at least as often as plain Python counts it."""
    out = str(tmp_path / "out")
    os.mkdir(out)
    cluster.squall("submit", os.path.join(HERE, "topologies", "stateful_reliable.py"),
                   "--config-property", f"{OUT_KEY}={out}", "--config-property", f"testing.sentences={SENTENCES}",
                   "--config-property", f"{RATE_FILE_KEY}={rate_file(out)}")
    done = progress(out, TOTAL_WORDS // 5, "before the kill")
    victim = next(p["pid"] for p in json.loads(cluster.squall("show", "stateful_reliable", "--json")[0])["processes"]
                  if p["process"].startswith("instance count"))
    os.kill(victim, signal.SIGKILL)
    progress(out, done, "after the count bolt's SIGKILL")
    set_rate(rate_file(out), float("inf"))
    wait_until(lambda: words_committed(out) >= TOTAL_WORDS, timeout=120, interval=0.5,
               what=f"all {TOTAL_WORDS} words committed (so far {words_committed(out)})")
    checkpoint, counts = committed(out)
    cluster.squall("kill", "stateful_reliable")
    want = expected(SENTENCES)
    short = {w: want[w] - counts[w] for w in want if counts[w] < want[w]}
    assert not short, f"checkpoint {checkpoint}: words counted fewer times than sent: {dict(list(short.items())[:10])}"
