"""Checkpoints and state on the local cluster: the throughput they cost, and recovery after a SIGKILL.

    .venv/bin/python bench/state.py [--seconds 10] [--rounds 3] [--warmup 4]    # about 5 minutes

The topology is an unpaced word count, one container, 1 sentences, 2 split and
2 count tasks, never chained (a topology that checkpoints is not), metrics
buckets of 1 s. Each round runs, one after the other (figures drift from one
minute to the next on this shared 2-core machine, so every round has its own
baseline):

- baseline: bench/topologies/state_wc_plain.py at ATLEAST_ONCE: a plain
  ``Spout`` emitting every sentence with an id (a failed one is emitted again),
  a plain split, a plain ``Bolt`` counting in a dict; nothing is stateful, so no
  checkpoints; acking with XOR trees, ``topology.max.spout.pending``
  unlimited (its default of 1000 trees in flight holds this topology well
  below what it carries unlimited: bench/RESULTS.md);
- at most once: the same plain topology at ATMOST_ONCE (no acking, no
  checkpoints, no guarantee): what the data path costs without either;
- bench/topologies/state_wc.py at EFFECTIVELY_ONCE, a checkpoint every 1 s,
  then every 10 s: a ``StatefulSpout`` (its position saved at ``pre_save``), the
  same split, a ``StatefulBolt`` counting in its ``KeyValueState`` (10,000
  words, one key each), a two-phase sink (its words committed at ``post_save``).
  No acking at EFFECTIVELY_ONCE.

Throughput: words counted per second over ``--seconds`` after ``--warmup``
seconds of RUNNING, from the count tasks' own reports (each tick, 0.1 s, a task
appends the words in its dict or state with the wall time; a task's rate is the
difference of its reports at both ends over the difference of their times;
the run's rate is the sum over tasks). Each is printed as a ratio to its
round's baseline (median over rounds) and to its round's at-most-once run.
For the checkpointing runs, over the same window: checkpoints completed and
abandoned (the coordinator's counts in ``squall metrics --json``), the last
complete checkpoint's duration (START to the last task's SAVED), size and
alignment (the longest of its tasks) as the coordinator reports them, and, from
the metrics files, the mean time a count task spends saving
(``__checkpoint_save_ms`` / ``__checkpoint_saves``) and the longest alignment
any task reported in the window (``__checkpoint_align_ms``).

Recovery, in each checkpointing run after its throughput window: SIGKILL of
the process of count task 1 (``instance count[0]``); the executor restarts it,
a new physical plan makes every task roll back. Age: seconds from the newest
checkpoint every count task had committed to the kill (the kill comes at the
same time after the submit in every round, not at a random phase of the
interval). Times from the SIGKILL:

- rolled back: every count task has rolled back (an ``init_state`` after the
  kill; the newest one of each when the next figure is reached);
- counting again: every count task has rolled back and the words in the count
  tasks' states add up past their total in the reports read just before the
  kill, i.e. the pipeline has redone what the rollback undid and goes on;
- committed again: every count task has committed (``post_save``), after its
  rollback, a checkpoint that holds more words than the newest checkpoint all
  had committed at the kill;
- redone: the words the rollback undid (total before the kill minus the
  total the rollbacks restored), in seconds of the run's measured throughput;
- the coordinator's ``last_restore_ms`` and how many restores the kill caused
  (``restores`` in ``squall metrics --json``). The coordinator counts from the
  physical plan that names the restarted process to the last RESTORED: the
  executor's restart (1 s back-off) and the process's start come before it.

Reports are tailed every 50 ms and written every 0.1 s: the times above are
+-0.15 s.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Callable, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
TOPOLOGIES = os.path.join(HERE, "topologies")
NAME = "state_wc"
VICTIM = "instance count[0]"


@dataclass(frozen=True)
class Setup:
    label: str
    file: str
    mode: str
    interval: Optional[float] = None  # seconds between checkpoints (EFFECTIVELY_ONCE)

    @property
    def checkpoints(self) -> bool:
        return self.interval is not None

    def properties(self) -> list:
        props = [f"topology.reliability.mode={self.mode}", "topology.builtin.metrics.bucket.size.secs=1"]
        if self.mode == "ATLEAST_ONCE":
            props.append("topology.max.spout.pending=null")
        if self.interval is not None:
            props.append(f"topology.state.checkpoint.interval.secs={self.interval:g}")
        return props


BASELINE = Setup("ATLEAST_ONCE, plain (baseline)", "state_wc_plain.py", "ATLEAST_ONCE")
AT_MOST_ONCE = Setup("ATMOST_ONCE, plain", "state_wc_plain.py", "ATMOST_ONCE")
SETUPS = (BASELINE, AT_MOST_ONCE,
          Setup("EFFECTIVELY_ONCE, every 1 s", "state_wc.py", "EFFECTIVELY_ONCE", 1.0),
          Setup("EFFECTIVELY_ONCE, every 10 s", "state_wc.py", "EFFECTIVELY_ONCE", 10.0))


# ------------------------------------------------------------------ the count tasks' reports
@dataclass
class Task:
    counted: tuple = (0.0, 0)  # (wall time, words) of its newest report
    restored: Optional[tuple] = None  # (wall time, words) of its newest init_state
    committed: dict = field(default_factory=dict)  # checkpoint id -> (words, wall time)


class Reports:
    """Tails the count tasks' ``counted-<task>.jsonl`` and ``committed-<task>.jsonl``
    (bench/topologies/state_wc.py)."""

    def __init__(self, out: str):
        self.out = out
        self.offsets: dict = {}
        self.tasks: dict = {}

    def poll(self) -> None:
        for path in glob.glob(os.path.join(self.out, "*.jsonl")):
            kind, task_id = os.path.basename(path)[:-len(".jsonl")].split("-")
            task = self.tasks.setdefault(int(task_id), Task())
            with open(path, "rb") as f:
                f.seek(self.offsets.get(path, 0))
                data = f.read()
            end = data.rfind(b"\n") + 1  # a line being written is read next time
            self.offsets[path] = self.offsets.get(path, 0) + end
            for line in data[:end].splitlines():
                row = json.loads(line)
                if kind == "committed":
                    task.committed[row["checkpoint"]] = (row["words"], row["at"])
                else:
                    task.counted = (row["at"], row["words"])
                    if row.get("restored"):
                        task.restored = task.counted

    def counted(self) -> int:
        """Words in the count tasks' dicts or states, as last reported."""
        return sum(t.counted[1] for t in self.tasks.values())

    def committed_at(self) -> Optional[float]:
        """When the newest checkpoint every count task has committed was (its last task's ``post_save``)."""
        common = set.intersection(*(set(t.committed) for t in self.tasks.values())) if self.tasks else set()
        return max(t.committed[max(common)][1] for t in self.tasks.values()) if common else None

    def committed(self, since: Optional[float] = None) -> int:
        """Words of the newest checkpoint every count task has committed (0: none); with ``since``, only
        commits written after the task's newest rollback, itself after ``since``."""
        def fresh(task: Task, at: float) -> bool:
            return task.restored is not None and since < task.restored[0] < at

        common = set.intersection(*(set(t.committed) for t in self.tasks.values())) if self.tasks else set()
        for cid in sorted(common, reverse=True):
            if since is None or all(fresh(t, t.committed[cid][1]) for t in self.tasks.values()):
                return sum(t.committed[cid][0] for t in self.tasks.values())
        return 0

    def rolled_back(self, since: float) -> bool:
        return all(t.restored is not None and t.restored[0] > since for t in self.tasks.values())

    def rate(self, seconds: float) -> float:
        """Words counted per second over the next ``seconds``: each task's reports at both ends."""
        self.poll()
        before = {k: t.counted for k, t in self.tasks.items()}
        time.sleep(seconds)
        self.poll()
        rate = 0.0
        for k, t in self.tasks.items():
            (at0, words0), (at1, words1) = before.get(k, (0.0, 0)), t.counted
            if at1 > at0:
                rate += (words1 - words0) / (at1 - at0)
        return rate


# ------------------------------------------------------------------ one topology on a local cluster
class Run:
    def __init__(self, setup: Setup):
        self.setup = setup
        self.home = tempfile.mkdtemp(prefix="squall-state-")
        self.out = os.path.join(self.home, "out")
        os.makedirs(self.out)
        self.env = dict(os.environ, SQUALL_HOME=self.home)
        self.reports = Reports(self.out)
        self.run_dir = ""

    def squall(self, *args: str) -> str:
        done = subprocess.run([sys.executable, "-m", "squall.cli", *args], env=self.env, check=True,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        return done.stdout

    def submit(self) -> None:
        args = ["submit", os.path.join(TOPOLOGIES, self.setup.file), "--config-property", f"bench.out.dir={self.out}"]
        for prop in self.setup.properties():
            args += ["--config-property", prop]
        self.squall(*args)
        self.run_dir = self.show()["run_dir"]

    def show(self) -> dict:
        return json.loads(self.squall("show", NAME, "--json"))

    def metrics(self) -> dict:
        return json.loads(self.squall("metrics", NAME, "--json"))

    def wait(self, predicate: Callable[[], bool], what: str, timeout: float = 90.0) -> float:
        """Seconds until ``predicate()`` (the reports are polled first, every 50 ms)."""
        start = time.monotonic()
        while True:
            self.reports.poll()
            if predicate():
                return time.monotonic() - start
            if time.monotonic() - start > timeout:
                raise TimeoutError(f"{self.setup.label}: {what} not within {timeout:.0f} s")
            time.sleep(0.05)

    def instance_rows(self, since: float, until: float) -> list:
        """The instances' metrics rows of the buckets that overlap ``since`` .. ``until`` (wall times)."""
        rows = []
        for path in glob.glob(os.path.join(self.run_dir, "metrics", "container-*.jsonl")):
            with open(path) as f:
                for line in f:
                    if line.endswith("\n"):
                        row = json.loads(line)
                        # a row covers the interval_secs before its ts: those that overlap the window
                        overlaps = row["ts"] > since and row["ts"] - row["interval_secs"] < until
                        if row["process"] == "instance" and overlaps:
                            rows.append(row)
        return rows

    def close(self) -> None:
        try:
            self.squall("kill", NAME)
        finally:
            shutil.rmtree(self.home, ignore_errors=True)


def checkpoint_figures(run: Run, before: dict, after: dict, since: float, until: float) -> dict:
    """What the window's checkpoints took: the coordinator's figures and the tasks' metrics rows."""
    rows = run.instance_rows(since, until)
    count = [r["user"] for r in rows if r["component"] == "count"]
    saves = sum(u.get("__checkpoint_saves", 0) for u in count)
    return {"completed": after["completed"] - before["completed"], "failed": after["failed"] - before["failed"],
            "duration_ms": after["duration_ms"], "kib": None if after["bytes"] is None else after["bytes"] / 1024,
            "align_ms": after["align_ms"],
            "save_ms": sum(u.get("__checkpoint_save_ms", 0.0) for u in count) / saves if saves else None,
            "align_max_ms": max((r["user"]["__checkpoint_align_ms"] for r in rows
                                 if r["user"].get("__checkpoint_saves")), default=None)}


def recover(run: Run, rate: float) -> dict:
    """SIGKILL count task 1's process; the times of the module docstring."""
    restores = run.metrics()["checkpoints"]["restores"]
    pid = next(p["pid"] for p in run.show()["processes"] if p["process"].startswith(VICTIM))
    run.reports.poll()
    counted, committed, committed_at = run.reports.counted(), run.reports.committed(), run.reports.committed_at()
    killed_at = time.time()
    os.kill(pid, signal.SIGKILL)
    reports = run.reports
    counting = run.wait(lambda: reports.rolled_back(killed_at) and reports.counted() > counted, "counting again")
    rolled_back = max(t.restored[0] for t in reports.tasks.values()) - killed_at
    restored_words = sum(t.restored[1] for t in reports.tasks.values())
    committing = counting + run.wait(lambda: reports.committed(since=killed_at) > committed, "committing again")
    figures = run.metrics()["checkpoints"]
    return {"age s": None if committed_at is None else killed_at - committed_at, "rolled back s": rolled_back, "counting s": counting, "committed s": committing,
            "redone s": (counted - restored_words) / rate if rate else None,
            "restore ms": figures["last_restore_ms"], "restores": figures["restores"] - restores}


def one_run(setup: Setup, seconds: float, warmup: float) -> dict:
    run = Run(setup)
    try:
        run.submit()
        run.wait(lambda: len(run.reports.tasks) == 2, "reports of both count tasks", timeout=30)
        time.sleep(warmup)
        result: dict = {}
        before = run.metrics()["checkpoints"] if setup.checkpoints else None
        since = time.time()
        result["rate"] = run.reports.rate(seconds)
        if setup.checkpoints:
            until, after = time.time(), run.metrics()["checkpoints"]
            time.sleep(1.2)  # the window's last metrics bucket reaches the file
            result.update(checkpoint_figures(run, before, after, since, until))
            result.update(recover(run, result["rate"]))
        elif setup.mode == "ATLEAST_ONCE":
            result["failed"] = run.metrics()["components"]["sentences"]["failed"]
        return result
    finally:
        run.close()


# ------------------------------------------------------------------ printing
def words(rate: float) -> str:
    return f"{rate / 1e6:.2f}M" if rate >= 1e6 else f"{rate / 1e3:.0f}k"


def median(values: list) -> Optional[float]:
    """The median of the figures there are (None: not measured)."""
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def figure(value: Optional[float], width: int, digits: int = 2) -> str:
    return f"{'-':>{width}}" if value is None else f"{value:>{width}.{digits}f}"


def print_throughput(rounds: list) -> None:
    print(f"\nthroughput: words counted/s over the window; ratios are each round's run over the same round's "
          f"baseline (or at-most-once) run, median of {len(rounds)} rounds")
    print(f"{'run':<32} {'words/s':>8} {'rounds':>22} {'x baseline':>11} {'x at most once':>15}")
    for setup in SETUPS:
        rates = [r[setup]["rate"] for r in rounds]
        to_base = median([r[setup]["rate"] / r[BASELINE]["rate"] for r in rounds])
        to_amo = median([r[setup]["rate"] / r[AT_MOST_ONCE]["rate"] for r in rounds])
        print(f"{setup.label:<32} {words(median(rates)):>8} {' '.join(words(x) for x in rates):>22} "
              f"{to_base:>11.2f} {to_amo:>15.2f}")
    failed = sum(r[BASELINE].get("failed", 0) for r in rounds)
    if failed:
        print(f"(the baseline's spout saw {failed} failed trees: emitted again, and counted twice)")


def print_checkpoints(rounds: list) -> None:
    print("\ncheckpoints in the window (median of rounds; duration, size, alignment: the last complete one, "
          "as the coordinator reports it; save and align max: the tasks' metrics rows)")
    keys = ("completed", "failed", "duration_ms", "kib", "align_ms", "save_ms", "align_max_ms")
    heads = ("complete", "abandoned", "duration ms", "KiB", "align ms", "save ms", "align max ms")
    print(f"{'run':<32} " + " ".join(f"{h:>12}" for h in heads))
    for setup in (s for s in SETUPS if s.checkpoints):
        print(f"{setup.label:<32} " + " ".join(figure(median([r[setup][k] for r in rounds]), 12, 1) for k in keys))


def print_recovery(rounds: list) -> None:
    keys = ("age s", "rolled back s", "counting s", "committed s", "redone s", "restore ms", "restores")
    print("\nrecovery after a SIGKILL of count task 1's process (times from the kill; module docstring)")
    print(f"{'run':<32} {'round':>5} " + " ".join(f"{k:>14}" for k in keys))
    for setup in (s for s in SETUPS if s.checkpoints):
        for i, r in enumerate(rounds, 1):
            print(f"{setup.label:<32} {i:>5} " + " ".join(figure(r[setup][k], 14) for k in keys))
        print(f"{setup.label:<32} {'med':>5} " + " ".join(figure(median([r[setup][k] for r in rounds]), 14)
                                                          for k in keys))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=10.0, help="throughput window of each run")
    p.add_argument("--rounds", type=int, default=3, help="rounds of the four runs (one SIGKILL per checkpointing run)")
    p.add_argument("--warmup", type=float, default=4.0, help="seconds of RUNNING before the window")
    args = p.parse_args()
    rounds = []
    started = time.monotonic()
    for i in range(args.rounds):
        result = {}
        for setup in SETUPS:
            result[setup] = one_run(setup, args.seconds, args.warmup)
            print(f"round {i + 1}: {setup.label}: {words(result[setup]['rate'])} words/s", flush=True)
        rounds.append(result)
    print_throughput(rounds)
    print_checkpoints(rounds)
    print_recovery(rounds)
    print(f"\n({time.monotonic() - started:.0f} s in all)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
