"""Map-side combining at EFFECTIVELY_ONCE: a count bolt killed mid-run rolls every task back to the last
complete checkpoint, and the committed counts still equal plain Python's exactly. A batch of partials never
spans a checkpoint marker (the sender flushes before its markers) and a rollback drops unsent batches
whole, so each partial is of one epoch (docs/runtime.md, Map-side combining)."""
import json
import os
import signal
from collections import Counter

from e2e_harness import wait_until
from stateful_combine import key

from squall.testing.sinks import OUT_KEY, committed_counts as committed
from squall.testing.words import expected

HERE = os.path.dirname(os.path.abspath(__file__))
SENTENCES = 6000


def keyed_expected():
    want = Counter()
    for word, n in expected(SENTENCES).items():
        want[key(word)] += n
    return want


def test_a_combined_stateful_count_killed_mid_run_commits_exact_counts(cluster, tmp_path):
    out = str(tmp_path / "out")
    os.mkdir(out)
    cluster.squall("submit", os.path.join(HERE, "topologies", "stateful_combine.py"),
                   "--config-property", f"{OUT_KEY}={out}")
    want = keyed_expected()
    words = sum(want.values())
    wait_until(lambda: sum(committed(out)[1].values()) > words // 5, timeout=60, interval=0.3,
               what="a fifth of the words committed")
    shown = json.loads(cluster.squall("show", "stateful_combine", "--json")[0])
    victim = next(p["pid"] for p in shown["processes"] if p["process"].startswith("instance count"))
    os.kill(victim, signal.SIGKILL)
    wait_until(lambda: sum(committed(out)[1].values()) >= words, timeout=90, interval=0.5,
               what="every word committed")
    checkpoint, counts = committed(out)
    metrics = json.loads(cluster.squall("metrics", "stateful_combine", "--json")[0])
    cluster.squall("kill", "stateful_combine")
    assert counts == want, f"checkpoint {checkpoint}: {counts} != {want}"
    assert metrics["checkpoints"]["restores"] >= 2, metrics["checkpoints"]  # the start and the kill
    assert metrics["components"]["count"]["executed"] < words, "partials crossed the exchange, not every word"
