"""Chained word count end to end: exact counts, per-component metrics as unchained, chains shown."""
import json
import os

import pytest
from corpus import expected as expected_counts
from e2e_harness import read_counts, wait_until

HERE = os.path.dirname(os.path.abspath(__file__))
TOTAL = sum(expected_counts(2000).values())


def _metrics(cluster):
    return json.loads(cluster.squall("metrics", "wc_finite", "--json")[0])


@pytest.mark.parametrize("mode", ["ATMOST_ONCE", "ATLEAST_ONCE"])
def test_chained_word_count_is_exact_and_reports_every_component(cluster, tmp_path, mode):
    out = tmp_path / "out"
    out.mkdir()
    cluster.squall("submit", os.path.join(HERE, "topologies", "wc_finite.py"), "--config-property",
                   f"e2e.out.dir={out}", "--config-property", "squall.chaining=auto", "--config-property",
                   f"topology.reliability.mode={mode}", "--config-property", "topology.workers=1",
                   "--config-property", "topology.builtin.metrics.bucket.size.secs=0.5")
    shown = json.loads(cluster.squall("show", "wc_finite", "--json")[0])
    assert shown["chains"] == [["sentences", "split"]]
    chained = [p for p in shown["processes"] if p["process"].startswith("chain ")]
    assert sorted(p["process"] for p in chained) == [
        "chain sentences[0] task 3 -> split[0] task 5", "chain sentences[1] task 4 -> split[1] task 6"]
    assert not [p for p in shown["processes"] if p["process"].startswith("instance split")]
    text, _ = cluster.squall("show", "wc_finite")
    assert "chains (one process per task of each): sentences -> split" in text

    wait_until(lambda: sum(sum(c.values()) for c in read_counts(str(out)).values()) >= TOTAL,
               timeout=90, what=f"{TOTAL} words counted")
    assert sum(read_counts(str(out)).values(), start=type(expected_counts(1))()) == expected_counts(2000)
    # the same counts an unchained run reports (tests/e2e/test_word_count.py): every component, every task
    wait_until(lambda: _metrics(cluster)["components"].get("count", {}).get("executed") == TOTAL,
               timeout=30, what="the metrics to count every word")
    wait_until(lambda: _metrics(cluster)["components"].get("split", {}).get("executed") == 2000,
               timeout=30, what="the metrics to count every sentence at split")
    metrics = _metrics(cluster)
    assert metrics["components"]["sentences"]["emitted"] == 2000
    assert metrics["components"]["split"]["emitted"] == TOTAL
    assert sorted(t["executed"] for t in metrics["tasks"].values() if t["component"] == "split") == [1000, 1000]
    assert metrics["chains"] == [["sentences", "split"]]
    text, _ = cluster.squall("metrics", "wc_finite")
    assert "chains (one process per task of each; every component's figures are its own): sentences -> split" \
        in text
    cluster.squall("kill", "wc_finite")


def test_a_chained_task_s_log_lines_name_it(cluster, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    cluster.squall("submit", os.path.join(HERE, "topologies", "wc_finite.py"), "--config-property",
                   f"e2e.out.dir={out}", "--config-property", "squall.chaining=auto", "--config-property",
                   "topology.workers=1")
    logs, _ = cluster.squall("logs", "wc_finite", "--component", "split")
    assert logs.count("==> ") == 2 and "instance-3-sentences+5-split.log" in logs
    assert "squall.runtime.instance.loop [sentences]: task 3 runs the chain sentences task 3 -> split task 5" in logs
    only_task, _ = cluster.squall("logs", "wc_finite", "--task", "6")
    assert only_task.count("==> ") == 1 and "instance-4-sentences+6-split.log" in only_task
    cluster.squall("kill", "wc_finite")


@pytest.mark.parametrize("shape", ["fused 1/1/1", "1/2/2"])
@pytest.mark.parametrize("mode", ["ATMOST_ONCE", "ATLEAST_ONCE"])
def test_the_batch_api_counts_exactly_chained_or_not(cluster, tmp_path, shape, mode):
    """emit_many/emit_columns and process_batch (rows and columns mixed, wc_batch.py): handed on as
    batches in a chain, received as runs through the stream manager, each word by fields grouping to
    one of two count tasks (1/2/2: nothing can be chained); at least once every id is acked."""
    out = tmp_path / "out"
    out.mkdir()
    cluster.squall("submit", os.path.join(HERE, "topologies", "wc_batch.py" if shape == "fused 1/1/1" else
                                          "wc_batch_wide.py"), "--config-property",
                   f"e2e.out.dir={out}", "--config-property", "squall.chaining=auto", "--config-property",
                   f"topology.reliability.mode={mode}", "--config-property", "squall.component.cpu=0.3")  # 3 in a core
    shown = json.loads(cluster.squall("show", "wc_batch", "--json")[0])
    assert shown["chains"] == ([["sentences", "split", "count"]] if shape == "fused 1/1/1" else [])
    wait_until(lambda: sum(sum(c.values()) for c in read_counts(str(out)).values()) >= TOTAL,
               timeout=90, what=f"{TOTAL} words counted")
    assert sum(read_counts(str(out)).values(), start=type(expected_counts(1))()) == expected_counts(2000)
    if mode == "ATLEAST_ONCE":
        acked = lambda: {int(x) for x in (out / "acked.log").read_text().split()}  # noqa: E731
        wait_until(lambda: acked() == set(range(2000)), timeout=30, what="every sentence id acked")
    cluster.squall("kill", "wc_batch")
