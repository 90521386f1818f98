"""Event-time watermarks end to end: an idle upstream task stalls windows only until
squall.window.idle.timeout.secs, and a far-future timestamp closes no window early (the windows are
exactly those plain Python computes from the honest timestamps)."""
import glob
import json
import os

from e2e_harness import wait_until

COUNT, FUTURE_AT, LAG, LENGTH = 450, 100, 1.0, 0.5


def lines(out, pattern):
    found = []
    for path in glob.glob(os.path.join(out, pattern)):
        with open(path) as f:
            found += [line for line in f if line.endswith("\n")]
    return found


def windows(out):
    return sorted(tuple(w[:2]) + (sorted(w[2]),) for w in map(json.loads, lines(out, "windows-*.jsonl")))


def reference(stamps):
    """Tumbling windows over the honest stamps (in order: none late) that the last one's watermark closed."""
    honest = [(i, ts) for i, ts in stamps if i != FUTURE_AT]
    mark = max(ts for _, ts in honest) - LAG
    out = {}
    for i, ts in honest:
        k = int(ts // LENGTH)
        if (k + 1) * LENGTH <= mark:
            out.setdefault((round(k * LENGTH, 9), round((k + 1) * LENGTH, 9)), []).append(i)
    return sorted(k + (sorted(v),) for k, v in out.items())


def executed(cluster, component):
    metrics = json.loads(cluster.squall("metrics", "watermarks", "--json")[0])
    return metrics["components"].get(component, {}).get("executed", 0)


def test_idle_upstream_task_and_far_future_timestamp(cluster, tmp_path):
    out = str(tmp_path / "out")
    os.mkdir(out)
    cluster.submit("windows_watermarks", f"e2e.out.dir={out}")
    wait_until(lambda: len(lines(out, "stamps.log")) == COUNT, timeout=60, what="every tuple emitted")
    stamps = [json.loads(line) for line in lines(out, "stamps.log")]
    expected = reference(stamps)
    assert len(expected) >= 3  # the run spans windows closed after the idle timeout (1 s)
    wait_until(lambda: windows(out) == expected, timeout=30,
               what="the windows the honest timestamps close, though one upstream task is idle")
    assert lines(out, "late-*.log") == []  # no honest tuple is late after the future one
    assert all(FUTURE_AT not in w[2] for w in windows(out))  # its window (ahead by 1e6 s) never closed
    cluster.squall("kill", "watermarks")


def test_without_an_idle_timeout_an_idle_task_holds_every_window(cluster, tmp_path):
    out = str(tmp_path / "out")
    os.mkdir(out)
    cluster.submit("windows_watermarks", f"e2e.out.dir={out}", "squall.window.idle.timeout.secs=null",
                   "topology.builtin.metrics.bucket.size.secs=0.5")
    wait_until(lambda: executed(cluster, "totals") == COUNT, timeout=60, what="every tuple at the windowed bolt")
    assert windows(out) == []  # Storm's behaviour: the idle task's watermark never comes
    cluster.squall("kill", "watermarks")
