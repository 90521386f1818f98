"""Does watching a topology in the UI slow it? Word count throughput with and without a poller, as ratios.

One saturated word count (bench/topologies/wc_bench.py, one container) runs
on the local cluster with ``squall ui`` serving it. Rounds alternate, each
``--seconds`` long, between no poller (the baseline), an HTTP client that
fetches the topology page and its API document every second (the UI
server's and the topology master's cost alone), and headless chromium
reloading the topology page every second (``?refresh=1``; the browser's own
CPU is on this 2-core machine too, unlike an operator's laptop). Printed:
words/s of each round, the median ratio of each poller's round to the
baseline round just before it, and the CPU the UI server and the topology
master used.

    .venv/bin/python bench/ui_polling.py [--seconds 8] [--rounds 3]
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

import psutil

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tests", "ui"))
from wordcount_e2e import TOPOLOGY, _snapshot  # noqa: E402

PAGE = "topology/wc_bench?window=60s"


def words(out: str) -> tuple:
    snap = _snapshot(out)
    return sum(s["words"] for s in snap.values()), max((s["at"] for s in snap.values()), default=0.0)


def measure(out: str, seconds: float) -> float:
    w0, t0 = words(out)
    time.sleep(seconds)
    w1, t1 = words(out)
    return (w1 - w0) / max(t1 - t0, 1e-9)


def http_poller(url: str, stop: threading.Event) -> None:
    while not stop.is_set():
        started = time.monotonic()
        for path in (PAGE, "api/v1/topology/wc_bench?window=60s"):
            with urllib.request.urlopen(url + path, timeout=10) as r:
                r.read()
        stop.wait(max(0.0, 1.0 - (time.monotonic() - started)))


def cpu(pids: list) -> float:
    total = 0.0
    for pid in pids:
        try:
            t = psutil.Process(pid).cpu_times()
            total += t.user + t.system
        except psutil.NoSuchProcess:
            pass
    return total


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    home = tempfile.mkdtemp(prefix="squall-bench-ui-")
    out = os.path.join(home, "out")
    os.makedirs(out)
    env = dict(os.environ, SQUALL_HOME=home)
    squall = [sys.executable, "-m", "squall.cli"]
    subprocess.run(squall + ["submit", TOPOLOGY, "--config-property", f"bench.out.dir={out}"], env=env, check=True,
                   stdout=subprocess.DEVNULL)
    ui = subprocess.Popen(squall + ["ui", "--port", "0"], env=env, stdout=subprocess.PIPE, text=True)
    browser = None
    try:
        url = ui.stdout.readline().split()[2]
        tmaster = [p.pid for p in psutil.process_iter(["cmdline"])
                   if "--role" in (p.info["cmdline"] or []) and "tmaster" in p.info["cmdline"]
                   and home in " ".join(p.info["cmdline"])]
        from browser import Browser

        time.sleep(4.0)  # warm up
        rates: dict = {"none": [], "http": [], "browser": []}
        ratios: dict = {"none": [1.0], "http": [], "browser": []}  # to the baseline round just before
        used: dict = {"none": [0.0, 0.0], "http": [0.0, 0.0], "browser": [0.0, 0.0]}
        for _ in range(args.rounds):
            for mode in ("none", "http", "none", "browser"):
                stop = threading.Event()
                if mode == "http":
                    threading.Thread(target=http_poller, args=(url, stop), daemon=True).start()
                elif mode == "browser":
                    browser = Browser()
                    browser.driver.get(url + PAGE + "&refresh=1")
                    time.sleep(1.0)
                before = (cpu([ui.pid]), cpu(tmaster))
                rates[mode].append(measure(out, args.seconds))
                if mode != "none":
                    ratios[mode].append(rates[mode][-1] / rates["none"][-1])
                used[mode][0] += cpu([ui.pid]) - before[0]
                used[mode][1] += cpu(tmaster) - before[1]
                stop.set()
                if browser is not None:
                    browser.close()
                    browser = None
        for mode in ("none", "http", "browser"):
            secs = args.seconds * len(rates[mode])
            print(f"{mode:>8}: {', '.join(f'{r / 1e3:.0f}k' for r in rates[mode])} words/s; "
                  f"median ratio to the baseline round before {statistics.median(ratios[mode]):.2f}; "
                  f"UI server CPU {used[mode][0] / secs * 100:.1f}%, topology master {used[mode][1] / secs * 100:.1f}%")
    finally:
        if browser is not None:
            browser.close()
        ui.terminate()
        ui.wait(timeout=15)
        subprocess.run(squall + ["kill", "wc_bench"], env=env, check=True, stdout=subprocess.DEVNULL)
        shutil.rmtree(home, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
