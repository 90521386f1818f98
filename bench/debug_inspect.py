"""What looking inside a running topology costs (docs/debugging.md), each figure against a baseline run in
this invocation:

- log search (``squall/log_search.py``: stamps parsed, newest kept in a bounded heap) over a 64 MiB log
  (``squall.log.max.mb``'s default) against a bare ``for line in file: pattern.search(line)`` loop;
- a task's throughput while the in-process sampler draws a flame graph (every 10 ms, the default, and
  every 1 ms), and while tracemalloc traces it, against the same loop unobserved;
- one ``--stacks`` round trip through a container's debug server (HTTP, signal, faulthandler's dump).

    .venv/bin/python bench/debug_inspect.py
"""
from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import tracemalloc
import urllib.request

from squall.log_search import compile_pattern, search
from squall.runtime.debug_agent import sample_stacks
from squall.runtime.debug_server import DebugServer, ServerSettings
from squall.runtime.profiles import Target

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ui_store import timed  # noqa: E402  (the best of N wall-clock runs)

LOG_MB = 64
ROUNDS = 5


def write_log(path: str) -> int:
    """A log of ``LOG_MB`` MiB in the runtime's format; one line in 1,000 says ``boom``. Returns its lines."""
    line = "2026-11-26 10:00:{s:02d},{ms:03d} INFO [c1 instance-3 4242] squall.user.split: processed tuple {i} {w}\n"
    n = size = 0
    with open(path, "w") as f:
        while size < LOG_MB * 1024 * 1024:
            text = line.format(s=n // 1000 % 60, ms=n % 1000, i=n, w="boom" if n % 1000 == 0 else "ok")
            f.write(text)
            size += len(text)
            n += 1
    return n


def bare_grep(path: str, pattern: re.Pattern) -> int:
    found = 0
    with open(path, errors="replace") as f:
        for line in f:
            if pattern.search(line):
                found += 1
    return found


def work_rate(seconds: float, observe: object = None) -> float:
    """Iterations per second of a pure-Python loop in a thread, while ``observe()`` runs in this one."""
    done = [0]
    stop = threading.Event()

    def work() -> None:
        while not stop.is_set():
            sum(range(200))
            done[0] += 1

    worker = threading.Thread(target=work, name="task")
    worker.start()
    t0 = time.perf_counter()
    if observe is None:
        time.sleep(seconds)
    else:
        observe(seconds)
    stop.set()
    worker.join()
    return done[0] / (time.perf_counter() - t0)


def traced(seconds: float) -> None:
    tracemalloc.start()
    time.sleep(seconds)
    tracemalloc.take_snapshot()
    tracemalloc.stop()


CHILD = textwrap.dedent("""
    import sys, time
    from squall.runtime.debug_agent import DebugAgent
    DebugAgent(sys.argv[1]).install()
    while True:
        time.sleep(0.01)
""")


def stacks_round_trip(folder: str, repeat: int = 20) -> list[float]:
    debug_dir = os.path.join(folder, "debug")
    child = subprocess.Popen([sys.executable, "-c", CHILD, debug_dir])
    server = DebugServer("127.0.0.1", ServerSettings(1, "127.0.0.1", "s", folder, debug_dir, 10, "sampler", 0.01, 60))
    target = Target("instance-1-x", child.pid, debug_dir)
    server.tasks = {1: target}
    server.start()
    try:
        while not target.ready():
            time.sleep(0.01)
        times = []
        for _ in range(repeat):
            request = urllib.request.Request(f"http://{server.address}/stacks", data=json.dumps({"task": 1}).encode(),
                                             method="POST", headers={"Authorization": "Bearer s"})
            t0 = time.perf_counter()
            with urllib.request.urlopen(request, timeout=30) as reply:
                reply.read()
            times.append(time.perf_counter() - t0)
        return times
    finally:
        server.close()
        child.kill()
        child.wait()


def main() -> None:
    print(f"load: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}")
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "instance-3-split.log")
        lines = write_log(path)
        pattern = compile_pattern("boom")
        base = timed(lambda: bare_grep(path, pattern), repeat=3)
        ours = timed(lambda: search([path], pattern, None, 500), repeat=3)
        print(f"log search, {LOG_MB} MiB ({lines:,} lines): bare loop {base:.2f}s "
              f"({lines / base / 1e6:.2f} M lines/s), "
              f"search() {ours:.2f}s ({lines / ours / 1e6:.2f} M lines/s): {ours / base:.2f}x the bare loop")
        stamps = timed(lambda: search([path], compile_pattern("processed"), None, 500), repeat=3)
        print(f"  every line matching (the heap kept full): {stamps:.2f}s, {stamps / base:.2f}x the bare loop")
        since = timed(lambda: search([path], pattern, time.time() + 3600, 500), repeat=3)
        print(f"  --since after the file's last write (not opened): {since * 1e6:.0f} us")

        observers = {"sampler 10 ms": lambda t: sample_stacks(t, 0.01),
                     "sampler 1 ms": lambda t: sample_stacks(t, 0.001), "tracemalloc": traced}
        ratios: dict[str, list[float]] = {label: [] for label in observers}
        for _ in range(ROUNDS):  # interleaved, each against the loop alone in its own round (the load moves)
            for label, observe in observers.items():
                alone = work_rate(1.0)
                ratios[label].append(work_rate(1.0, observe) / alone)
        for label, values in ratios.items():
            print(f"task loop with the {label}: median {statistics.median(values):.2f}x alone "
                  f"(rounds {min(values):.2f}-{max(values):.2f}x)")

        times = stacks_round_trip(folder)
        print(f"--stacks round trip (server, signal, dump): median {statistics.median(times) * 1000:.0f} ms, "
              f"max {max(times) * 1000:.0f} ms over {len(times)}")


if __name__ == "__main__":
    main()
