"""At least once with windows: SIGKILL the windowed bolt mid-run; no window's input is lost (every id is
acked, and every acked id is in a window the bolt processed: the ones it held when killed were replayed)."""
import glob
import json
import os
import signal
from collections import Counter

from e2e_harness import wait_until

HERE = os.path.dirname(os.path.abspath(__file__))
IDS = 1500


def acked(out):
    with open(os.path.join(out, "acked.log")) as f:
        return {int(line) for line in f if line.endswith("\n")}


def windowed(out):
    seen = Counter()
    for path in glob.glob(os.path.join(out, "windows-*.log")):
        with open(path) as f:
            for line in f:
                if line.endswith("\n"):
                    seen.update(json.loads(line))
    return seen


def test_sigkill_of_the_windowed_bolt_loses_no_window_input(cluster, tmp_path, capsys):
    out = str(tmp_path / "out")
    os.mkdir(out)
    cluster.squall("submit", os.path.join(HERE, "topologies", "windowed_reliable.py"),
                   "--config-property", f"faults.out.dir={out}")
    wait_until(lambda: os.path.exists(os.path.join(out, "acked.log")) and len(acked(out)) > 300, timeout=60,
               what="ids acked through their windows")
    processes = json.loads(cluster.squall("show", "windowed_reliable", "--json")[0])["processes"]
    victim = next(p["pid"] for p in processes if p["process"].startswith("instance totals"))
    os.kill(victim, signal.SIGKILL)
    wait_until(lambda: len(acked(out)) == IDS, timeout=90, interval=0.5,
               what=f"every one of {IDS} ids acked (so far {len(acked(out))})")
    seen = windowed(out)
    missing = set(range(IDS)) - set(seen)
    assert not missing, f"{len(missing)} acked ids in no processed window: {sorted(missing)[:10]}"
    assert len(glob.glob(os.path.join(out, "windows-*.log"))) == 2  # the bolt was killed and restarted
    extra = sum(n - 2 for n in seen.values() if n > 2)  # each id is in two windows of a run
    with capsys.disabled():
        print(f"\n[windowed bolt killed] {extra} extra window memberships from replays, {IDS} ids")
    cluster.squall("kill", "windowed_reliable")
