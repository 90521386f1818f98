"""Streamlets end to end: a topology file exposing a builder runs as any topology, with exact results
against the same computation in plain Python (word count; windowed join and reduce, event time)."""
import json
import os
from collections import Counter

import pytest
from e2e_harness import wait_until
from streamlet_data import recorded, sliding_sums, tumbling_join, word_counts
from streamlet_data import left as left_elements

MODES = ["ATMOST_ONCE", "ATLEAST_ONCE"]


def counts(out):
    """Each word's update count and its last (largest) running count."""
    updates, last = Counter(), Counter()
    for word, n in recorded(out, "counts"):
        updates[word] += 1
        last[word] = max(last[word], n)
    return updates, last


@pytest.mark.parametrize("mode", MODES)
def test_streamlet_word_count_is_exact(cluster, tmp_path, mode):
    out = str(tmp_path / "out")
    os.mkdir(out)
    stdout, _ = cluster.submit("streamlet_wc", f"e2e.out.dir={out}", f"topology.reliability.mode={mode}")
    assert "topology 'streamlet_wc' is running" in stdout
    shown = json.loads(cluster.squall("show", "streamlet_wc", "--json")[0])
    assert shown["chains"] == [["count", "sink4"], ["lines", "words"]]  # 0.5 cpu each: key_by2 would pass a core
    expected = word_counts()
    wait_until(lambda: counts(out)[0] == expected, timeout=60, what="every word counted once")
    assert counts(out) == (expected, expected)  # one update per occurrence, ending at the exact count
    cluster.squall("kill", "streamlet_wc")


@pytest.mark.parametrize("mode", MODES)
def test_streamlet_windowed_join_and_reduce_are_exact(cluster, tmp_path, mode):
    out = str(tmp_path / "out")
    os.mkdir(out)
    cluster.submit("streamlet_join", f"e2e.out.dir={out}", f"topology.reliability.mode={mode}")
    expected_join = tumbling_join(10)
    expected_sums = sliding_sums(left_elements(), 20, 10)
    assert len(expected_join) > 100 and len(expected_sums) > 40

    def joined():
        return sorted([j["key"], *j["window"], *j["value"]] for j in recorded(out, "joined"))

    def sums():
        return sorted([s["key"], *s["window"], s["value"][2]] for s in recorded(out, "sums"))

    wait_until(lambda: joined() == expected_join and sums() == expected_sums, timeout=60,
               what="the join and the sums of every closed window")
    cluster.squall("kill", "streamlet_join")


def test_stateless_streamlet_operators_are_exact(cluster, tmp_path):
    out = str(tmp_path / "out")
    os.mkdir(out)
    cluster.submit("streamlet_ops", f"e2e.out.dir={out}")
    expected = sorted([2 * x for x in range(500)] + [x for x in range(500) if x % 2])
    wait_until(lambda: sorted(recorded(out, "merged")) == expected, timeout=60,
               what="doubled and odd numbers, united")
    shown = json.loads(cluster.squall("show", "streamlet_ops", "--json")[0])
    tasks = Counter(p["process"].split()[1].split("[")[0] for p in shown["processes"]
                    if p["process"].startswith(("instance", "chain")))
    assert tasks["spread"] == 3  # repartition(3): three tasks, chained with the three sink tasks

    def last_sums():
        last = {}
        for rest, total in recorded(out, "by_rest"):
            last[rest] = max(last.get(rest, total), total)
        return last

    wait_until(lambda: last_sums() == {r: sum(range(r, 500, 3)) for r in range(3)}, timeout=30,
               what="the running sums of each rest")
    assert len(recorded(out, "by_rest")) == 500  # one running sum per number
    wait_until(lambda: "logged: 499" in cluster.squall("logs", "streamlet_ops", "--component", "logged")[0],
               timeout=30, what="log() to log the last odd number")
    cluster.squall("kill", "streamlet_ops")


def test_a_spout_headed_chain_taking_input_through_the_stream_manager_never_stalls(cluster, tmp_path):
    """Backpressure stops the chain's spout; its bolts' consumed reports (on the same connection) end it."""
    out = str(tmp_path / "out")
    os.mkdir(out)
    cluster.submit("streamlet_loopback", f"e2e.out.dir={out}", "squall.component.cpu=0.2")  # five in a core
    shown = json.loads(cluster.squall("show", "streamlet_loopback", "--json")[0])
    assert ["numbers", "keyed", "sums", "filter3", "sink4"] in shown["chains"]
    expected = sorted([k, sum(range(k, 300_000, 10))] for k in range(10))
    wait_until(lambda: sorted(recorded(out, "sums")) == expected and sorted(recorded(out, "again")) == expected,
               timeout=60, what="both running sums to reach their totals")
    cluster.squall("kill", "streamlet_loopback")
