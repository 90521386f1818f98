"""Windowed bolts end to end on the local cluster: every window of every kind exactly as the same
computation in plain Python over the same input (tests/e2e/topologies/window_data.py), chained and
unchained, at most and at least once."""
import glob
import json
import os

import pytest
from e2e_harness import wait_until
from window_data import FLUSH_TS, LAG, count_windows, events, read_windows, sums, time_windows

HERE = os.path.dirname(os.path.abspath(__file__))
EVENTS = events(420)


def by_window(lines, field):
    return {(w["start"], w["end"]): w[field] for w in lines}


def ids(evs):
    return sorted(e[0] for e in evs)


def expected_results():
    tumbling, late = time_windows(EVENTS, 10, 10, LAG)
    sliding, _ = time_windows(EVENTS, 15, 5, LAG)
    return {
        "event_tumbling": {w: ids(evs) for w, evs in tumbling.items()},
        "event_sliding": {w: sums(evs) for w, evs in sliding.items()},
        "count_tumbling": {w: [e[0] for e in evs] for w, evs in count_windows(EVENTS, 7, 7).items()},
        "count_sliding": {w: [e[0] for e in evs] for w, evs in count_windows(EVENTS, 6, 3).items()},
        "late": ids(late),
        "totals": sorted([key, total, start] for (start, _), evs in tumbling.items()
                         for key, total in sums(evs).items()),
    }


def results(out):
    sink = []
    for path in glob.glob(os.path.join(out, "sink-*.log")):
        with open(path) as f:
            sink += [line for line in f if line.endswith("\n")]
    got = {"event_tumbling": by_window(read_windows(out, "event_tumbling"), "ids"),
           "event_sliding": by_window(read_windows(out, "event_sliding"), "sums"),
           "count_tumbling": by_window(read_windows(out, "count_tumbling"), "ids"),
           "count_sliding": by_window(read_windows(out, "count_sliding"), "ids")}
    got["late"] = sorted(json.loads(line[5:])[0] for line in sink if line.startswith("late "))
    got["totals"] = sorted(json.loads(line[8:]) for line in sink if line.startswith("default "))
    return got


def acked(out):
    done = []
    for path in glob.glob(os.path.join(out, "acked-*.log")):
        with open(path) as f:
            done += [int(line) for line in f if line.endswith("\n")]
    return done


def check_processing_time(lines, length, every):
    """Each tuple in exactly length/every windows, back to back, aligned to multiples of the slide."""
    windows = {}
    for w in lines:
        assert round(w["end"] - w["start"], 6) == length
        assert abs(w["start"] / every - round(w["start"] / every)) < 1e-6
        for i in w["ids"]:
            windows.setdefault(i, []).append(w["start"])
    assert sorted(windows) == list(range(len(EVENTS)))
    for i, starts in windows.items():
        assert len(starts) == round(length / every), (i, starts)
        assert all(abs(b - a - every) < 1e-6 for a, b in zip(starts, starts[1:])), (i, starts)


@pytest.mark.parametrize("mode, chaining", [("ATMOST_ONCE", "auto"), ("ATMOST_ONCE", "off"),
                                            ("ATLEAST_ONCE", "auto")])
def test_every_window_is_exact(cluster, tmp_path, mode, chaining):
    out = str(tmp_path / "out")
    os.mkdir(out)
    cluster.submit("windows", f"e2e.out.dir={out}", f"topology.reliability.mode={mode}",
                   f"squall.chaining={chaining}")
    shown = json.loads(cluster.squall("show", "windows", "--json")[0])
    if chaining == "off":
        assert shown["chains"] == []
    elif mode == "ATMOST_ONCE":  # a windowed bolt both behind and ahead of a chain edge
        assert shown["chains"] == [["event_tumbling", "sink"], ["events", "count_sliding"]]
    else:  # at least once a windowed bolt acks for itself, so it heads its chain
        assert shown["chains"] == [["event_tumbling", "sink"]]
    expected = expected_results()
    wait_until(lambda: results(out) == expected, timeout=60, what="every window as plain Python computes them")
    assert expected["late"] and len(expected["event_tumbling"]) > 20  # the input has late tuples and many windows
    wait_until(lambda: len({i for w in read_windows(out, "proc_sliding") for i in w["ids"]}) == len(EVENTS)
               and sum(len(w["ids"]) for w in read_windows(out, "proc_sliding")) == 2 * len(EVENTS),
               timeout=30, what="every tuple in two processing-time windows")
    check_processing_time(read_windows(out, "proc_sliding"), 0.6, 0.3)
    tumbling = read_windows(out, "event_tumbling")  # new and expired, as Storm gives them
    assert all(w["new"] == w["ids"] for w in tumbling)
    assert [w["expired"] for w in tumbling[1:]] == [w["ids"] for w in tumbling[:-1]]
    if mode == "ATLEAST_ONCE":
        # acked once its last window is processed: all but the flush tuple (its window never closes) and
        # the last slide of the sliding count window (its last window needs three more tuples)
        waiting = {EVENTS[-1][0], 417, 418}
        assert EVENTS[-1][3] == FLUSH_TS
        wait_until(lambda: sorted(acked(out)) == sorted(set(range(len(EVENTS))) - waiting), timeout=30,
                   what="every tuple acked once its windows are processed")
    cluster.squall("kill", "windows")


@pytest.mark.parametrize("mode", ["ATMOST_ONCE", "ATLEAST_ONCE"])
def test_a_windowed_bolt_given_its_tuples_by_call_is_exact(cluster, tmp_path, mode):
    out = str(tmp_path / "out")
    os.mkdir(out)
    cluster.submit("windows_delivered", f"e2e.out.dir={out}", f"topology.reliability.mode={mode}")
    shown = json.loads(cluster.squall("show", "windows_delivered", "--json")[0])
    assert shown["chains"] == ([["events", "count_sliding"]] if mode == "ATMOST_ONCE" else [])
    expected = {w: [e[0] for e in evs] for w, evs in count_windows(EVENTS, 6, 3).items()}
    wait_until(lambda: by_window(read_windows(out, "count_sliding"), "ids") == expected, timeout=60,
               what="every count window")
    if mode == "ATLEAST_ONCE":
        wait_until(lambda: sorted(acked(out)) == list(range(len(EVENTS) - 3)), timeout=30,
                   what="all but the last slide acked")
    cluster.squall("kill", "windows_delivered")
