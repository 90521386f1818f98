"""squall.testing as a user gets it: complete_topology with mocked spouts, LocalCluster, wait_until, the
pytest plugin's fixtures."""
import json
import os
from collections import Counter

import pytest
from wc_components import word_count

from squall.testing import LocalCluster, complete_topology, wait_until
from squall.testing.words import Pace, set_rate

SENTENCES = [["the quick brown fox"], ["jumps over the lazy dog"], ["the end"]]


def test_complete_topology_returns_exactly_what_each_component_emitted():
    result = complete_topology(word_count(), mocked={"sentences": SENTENCES}, timeout=60)
    assert sorted(result.tuples("sentences")) == sorted(SENTENCES)
    words = [w for (s,) in SENTENCES for w in s.split()]
    assert sorted(result.tuples("split")) == sorted([w] for w in words)
    assert sorted(result.tuples("split", "lengths")) == sorted([len(w)] for w in words)
    # each word's running counts: 1..n for a word seen n times, whatever the order
    counts = Counter(words)
    assert sorted(map(tuple, result.tuples("count"))) == sorted((w, k) for w, n in counts.items()
                                                                 for k in range(1, n + 1))
    assert result.tuples("count", "nothing") == []


def test_complete_topology_refuses_a_name_that_is_not_a_spout():
    with pytest.raises(ValueError, match=r"mocked names \['split'\]; the topology's spouts are sentences"):
        complete_topology(word_count(), mocked={"split": [["x"]]})


def test_wait_until_returns_the_value_or_names_what_it_waited_for():
    calls = []
    assert wait_until(lambda: calls.append(1) or len(calls) >= 3 and "ready", timeout=5, interval=0.01) == "ready"
    with pytest.raises(AssertionError, match=r"timed out after 0.05s waiting for the moon"):
        wait_until(lambda: False, timeout=0.05, what="the moon", interval=0.01)


def test_a_local_cluster_runs_a_topology_until_killed_and_leaves_nothing(tmp_path):
    home = tmp_path / "home"
    with LocalCluster(home=str(home)) as cluster:
        name = cluster.submit(word_count(split_par=1, count_par=1),
                              config={"topology.workers": 1, "topology.builtin.metrics.bucket.size.secs": 1})
        assert cluster.show(name)["status"] == "RUNNING"
        wait_until(lambda: cluster.metrics(name)["components"].get("count", {}).get("executed"), timeout=60,
                   what="the count bolt to execute tuples")
        run_dir = cluster.run_dir(name)
        pids = [p["pid"] for p in cluster.show(name)["processes"] if p["pid"]]
    assert os.path.isdir(os.path.join(run_dir, "logs"))  # a run's folder stays, as after squall kill
    assert not [pid for pid in pids if _alive(pid)]
    assert os.environ.get("SQUALL_HOME") != str(home)  # restored


def test_the_plugins_cluster_fixture(squall_cluster):
    name = squall_cluster.submit(word_count(split_par=1, count_par=1), config={"topology.workers": 1})
    assert json.loads(json.dumps(squall_cluster.show(name)))["status"] == "RUNNING"


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except OSError:
        return False


def test_a_pace_follows_the_rate_set_rate_writes_while_it_runs(tmp_path):
    file = str(tmp_path / "rate")
    pace = Pace(1.0, file)  # one emit a second until the file says otherwise
    assert pace.due()
    pace.emitted()
    assert not pace.due()
    set_rate(file, float("inf"))
    wait_until(pace.due, timeout=5, interval=0.05, what="the unpaced rate read from the file")
    for _ in range(100):  # unpaced: every call is due
        pace.emitted()
        assert pace.due()
    set_rate(file, 1.0)

    def paced_again():
        pace.emitted()
        return not pace.due()

    wait_until(paced_again, timeout=5, interval=0.05, what="the rate of one a second read back")
