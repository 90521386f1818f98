"""Word count end to end on the local cluster: exact counts, then nothing left behind."""
import json
import os

from e2e_harness import read_counts, records_left, wait_until

from corpus import expected as expected_counts

from squall.state import LocalStateManager


def _metrics_with_all_words(cluster, total):
    out, _ = cluster.squall("metrics", "wc_finite", "--json")
    return out if json.loads(out)["components"].get("count", {}).get("executed") == total else None


def test_word_count_is_exact_and_kill_leaves_nothing(cluster, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    expected = expected_counts(2000)
    cluster_file = tmp_path / "cluster.yaml"  # a user key only the cluster file sets
    cluster_file.write_text(f"e2e.out.dir: {out}\n")
    stdout, _ = cluster.squall("submit", os.path.join(os.path.dirname(__file__), "topologies", "wc_finite.py"),
                               "--config-path", str(cluster_file),
                               # the metrics waited for below come a bucket at a time (5 s by default)
                               "--config-property", "topology.builtin.metrics.bucket.size.secs=1")
    assert "topology 'wc_finite' is running: 6 instances in 2 containers" in stdout

    total = sum(expected.values())
    wait_until(lambda: sum(sum(c.values()) for c in read_counts(str(out)).values()) >= total,
               timeout=90, what=f"{total} words counted")
    per_task = read_counts(str(out))
    merged = sum(per_task.values(), start=type(expected)())
    assert merged == expected
    # fields grouping: every word was counted by exactly one task
    owners = {}
    for task, counts in per_task.items():
        for word in counts:
            assert word not in owners, f"{word} counted by tasks {owners[word]} and {task}"
            owners[word] = task

    _, err = cluster.squall("submit", os.path.join(os.path.dirname(__file__), "topologies", "wc_finite.py"), expect=2)
    assert err == "squall: error: topology 'wc_finite' is already running; kill it first (squall kill wc_finite)\n"
    listed, _ = cluster.squall("list")
    assert "wc_finite" in listed and "RUNNING" in listed
    shown, _ = cluster.squall("show", "wc_finite")
    assert "stmgr" in shown and "instance count[0]" in shown

    metrics = json.loads(wait_until(lambda: _metrics_with_all_words(cluster, total), timeout=30,
                                    what="the topology master's metrics to count every word"))
    assert metrics["components"]["count"]["executed"] == total
    assert metrics["components"]["split"]["emitted"] == total
    assert sum(t["executed"] for t in metrics["tasks"].values() if t["component"] == "count") == total
    table, _ = cluster.squall("metrics", "wc_finite", "--tasks")
    assert table.splitlines()[0].split()[:5] == ["component", "emitted", "executed", "acked", "failed"]
    assert sum(1 for line in table.splitlines() if line.startswith("  task ")) == 6
    logs, _ = cluster.squall("logs", "wc_finite", "--component", "count")
    assert logs.count("==> ") == 2 and "instance-" in logs

    run_dir = cluster.run_dir("wc_finite")
    cluster.squall("kill", "wc_finite")
    assert cluster.processes() == []
    state = LocalStateManager(os.path.join(cluster.home, "state"))
    assert records_left(state, "wc_finite") == []
    assert os.path.isdir(os.path.join(run_dir, "logs")) and os.listdir(os.path.join(run_dir, "metrics"))
    cluster.squall("kill", "wc_finite", expect=2)
