"""Map-side combining end to end: exact word counts with a bolt combiner at 1/2/2 and 2/3/3, at most and at
least once (fewer tuples cross the exchange than there are words; at least once every sentence is acked);
the streamlets' reduce_by_key(combine=True) and a processing-time windowed reduction."""
import glob
import json
import os
from collections import Counter

import pytest
from e2e_harness import read_counts, wait_until
from streamlet_data import recorded, word_counts

from corpus import expected as expected_counts

SENTENCES = 2000


def summed(out, prefix):
    """The values of every ``<prefix>*.json`` in ``out``, added up."""
    total = None
    for path in glob.glob(os.path.join(out, f"{prefix}*.json")):
        with open(path) as f:
            value = json.load(f)
        total = value if total is None else total + value
    return total


# each parallelism (1/2/2, 2/3/3) and each mode once: the suite's time is budgeted
@pytest.mark.parametrize("topology,mode", [("wc_combine", "ATMOST_ONCE"), ("wc_combine_wide", "ATLEAST_ONCE")])
def test_word_count_with_a_bolt_combiner_is_exact(cluster, tmp_path, topology, mode):
    out = str(tmp_path / "out")
    os.mkdir(out)
    cluster.submit(topology, f"e2e.out.dir={out}", f"topology.reliability.mode={mode}")
    expected = expected_counts(SENTENCES)
    words = sum(expected.values())

    def merged():
        return sum(read_counts(out).values(), Counter())

    wait_until(lambda: merged() == expected, timeout=90, what=f"{words} words counted, each once")
    owners = {}
    for task, counts in read_counts(out).items():  # fields grouping: a word's partials all reach one task
        for word in counts:
            assert owners.setdefault(word, task) == task, f"{word} counted by tasks {owners[word]} and {task}"
    tuples = summed(out, "tuples-")  # written before the counts at each tick: final once they are
    assert len(expected) <= tuples < words, "partial counts crossed the exchange, not every word"
    if mode == "ATLEAST_ONCE":  # each run's partials in one span with every tree of the run
        wait_until(lambda: sorted(summed(out, "acked-") or []) == list(range(SENTENCES)), timeout=60,
                   what="every sentence acked")
    cluster.squall("kill", topology)


def test_streamlet_reduce_by_key_and_a_windowed_reduction_combine_exactly(cluster, tmp_path):
    out = str(tmp_path / "out")
    os.mkdir(out)
    cluster.submit("streamlet_combine", f"e2e.out.dir={out}")
    expected = word_counts()
    words = sum(expected.values())

    def last_counts():
        last = Counter()
        for word, n in recorded(out, "counts"):
            last[word] = max(last[word], n)
        return last

    def window_sums():
        sums = Counter()
        for w in recorded(out, "windows"):
            sums[w["key"]] += w["value"]
        return sums

    wait_until(lambda: last_counts() == expected, timeout=60, what="each word's running count to reach its count")
    updates = len(recorded(out, "counts"))
    assert len(expected) <= updates < words, "one update per partial, not per word"
    wait_until(lambda: window_sums() == expected, timeout=60, what="the windows' sums to add up to each word's count")

    def executed(component):
        metrics = json.loads(cluster.squall("metrics", "streamlet_combine", "--json")[0])
        return metrics["components"].get(component, {}).get("executed")

    # both take the same keyed words from the same tasks, batched alike: the same partials
    wait_until(lambda: executed("per_second") == updates, timeout=30,
               what=f"per_second to have taken the {updates} partials count took")
    cluster.squall("kill", "streamlet_combine")
