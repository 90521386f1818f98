"""Memory of a long sliding window: the incremental form (reduce/merge) against the full form (every tuple).

    .venv/bin/python bench/windows.py [--minutes 60] [--rate 500] [--window 600] [--every 10]

A per-key sum over a sliding window (``--window`` seconds every ``--every``) of
an event-time stream of ``--rate`` tuples a second (``[key, amount, ts]``, 100
keys) for ``--minutes`` minutes of event time, through the windowing state
machine a ``WindowedBolt`` runs (``squall/window_state.py``), with the tuple
objects the runtime makes. Each form runs in its own process (RSS is a
process's): the full form (``window.tuples``: the baseline), the incremental
form at most once (one ``{key: sum}`` per slide, no tuple kept), and the
incremental form at least once (it still holds each tuple until its last
window has fired, to ack it). It prints each one's RSS every 5 minutes of event
time, then the ratios: incremental / full at the end, and each form's growth
once the window is full (RSS at the end / RSS when the first window closed):
1.0 is flat. Prints figures, asserts nothing.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
FORMS = ("full", "incremental", "incremental at least once")
KEYS = 100


def run_form(form: str, minutes: float, rate: int, length: float, every: float) -> None:
    """The child: the stream through one form; prints JSON lines of (event minute, RSS MiB, windows fired)."""
    import psutil

    from squall import Window
    from squall.runtime.instance.tuples import ReceivedTuple
    from squall.component import TupleSource
    from squall.window_state import Incremental, Windower

    def add(acc: dict, tup: ReceivedTuple) -> dict:
        key = tup.values[0]
        acc[key] = acc.get(key, 0) + tup.values[1]
        return acc

    def merge(a: dict, b: dict) -> dict:
        out = dict(a)
        for key, value in b.items():
            out[key] = out.get(key, 0) + value
        return out

    incremental = None if form == "full" else Incremental(add, merge, dict)
    windower = Windower(Window.sliding(duration=length, every=every), timestamped=True,
                        incremental=incremental, keep_tuples=form != "incremental")
    windower.expect([1], 0.0)
    source = TupleSource("events", "default", 1, ("key", "amount", "ts"))
    process = psutil.Process()
    fired = 0
    checksum = 0
    total = int(minutes * 60 * rate)
    report_every = 5 * 60 * rate
    start = time.perf_counter()
    for i in range(total):
        ts = i / rate
        tup = ReceivedTuple()
        tup.values = [f"key-{i % KEYS}", i % 7, ts]
        tup.source = source
        for f in windower.on_tuple(tup, ts, 1, 1e12, 0.0)[1]:
            fired += 1
            if incremental is None:
                sums: dict = {}
                for t in f.view.tuples:
                    sums[t.values[0]] = sums.get(t.values[0], 0) + t.values[1]
            else:
                sums = f.view.value
            checksum += sum(sums.values())
        if (i + 1) % report_every == 0:
            print(json.dumps([(i + 1) / rate / 60, process.memory_info().rss / 2 ** 20, fired]), flush=True)
    print(json.dumps({"checksum": checksum, "secs": time.perf_counter() - start}), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=60.0, help="event-time minutes of input")
    parser.add_argument("--rate", type=int, default=500, help="tuples a second of event time")
    parser.add_argument("--window", type=float, default=600.0, help="window length, seconds")
    parser.add_argument("--every", type=float, default=10.0, help="slide, seconds")
    parser.add_argument("--form", choices=FORMS, help=argparse.SUPPRESS)  # the child
    args = parser.parse_args()
    if args.form:
        run_form(args.form, args.minutes, args.rate, args.window, args.every)
        return
    print(f"sliding {args.window:g} s every {args.every:g} s window, per-key sums ({KEYS} keys), "
          f"{args.rate} tuples/s of event time for {args.minutes:g} min ({int(args.minutes * 60 * args.rate):,} tuples)")
    results = {}
    for form in FORMS:
        child = subprocess.run([sys.executable, __file__, "--form", form, "--minutes", str(args.minutes),
                                "--rate", str(args.rate), "--window", str(args.window), "--every", str(args.every)],
                               check=True, capture_output=True, text=True)
        lines = [json.loads(line) for line in child.stdout.splitlines()]
        results[form] = (lines[:-1], lines[-1])
    checksums = {summary["checksum"] for _, summary in results.values()}
    print(f"same per-window sums in every form: {len(checksums) == 1}")
    print("RSS MiB by event-time minute:")
    print("minute  " + "  ".join(f"{form:>26}" for form in FORMS))
    for k, (minute, _, _) in enumerate(results["full"][0]):
        print(f"{minute:6.0f}  " + "  ".join(f"{results[form][0][k][1]:26.1f}" for form in FORMS))
    full_end = results["full"][0][-1][1]
    filled = max(0, int(args.window / 300) - 1)  # the first report after the first window closed
    for form in FORMS:
        series, summary = results[form]
        print(f"{form}: {summary['secs']:.1f} s; end RSS / full form's end RSS = {series[-1][1] / full_end:.2f}; "
              f"growth once the window is full (end / minute {series[filled][0]:.0f}) = "
              f"{series[-1][1] / series[filled][1]:.2f}")


if __name__ == "__main__":
    main()
