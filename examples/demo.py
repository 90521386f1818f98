"""The main job (``make demo``): word count on the embedded local cluster, then its report.

1. validate and pack ``examples/word_count.py``;
2. submit it to the local cluster and show a live view (tuples/s per
   component) for ``DEMO_SECONDS`` (30) seconds;
3. print the final metrics and kill the topology, leaving no process behind;
4. run the capacity report over the run's metrics and print where it is.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOPOLOGY_FILE = os.path.join(HERE, "word_count.py")
NAME = "word_count"
SQUALL = [sys.executable, "-m", "squall.cli"]


def squall(*args: str, check: bool = True, quiet: bool = False) -> subprocess.CompletedProcess:
    """Run a squall command as a user would, echoing it and (unless quiet) its output."""
    if not quiet:
        print(f"\n$ squall {' '.join(args)}", flush=True)
    result = subprocess.run(SQUALL + list(args), stdout=subprocess.PIPE, text=True)
    if not quiet:
        sys.stdout.write(result.stdout)
    if check and result.returncode != 0:
        sys.exit(f"demo: `squall {' '.join(args)}` failed with exit status {result.returncode}")
    return result


def live_view(seconds: float) -> None:
    from squall.state import open_state_manager

    with open_state_manager() as state:
        _live_view(state, seconds)


def _live_view(state: object, seconds: float) -> None:
    from squall.runtime.cli import format_metrics
    from squall.runtime.client import query_metrics

    tty = sys.stdout.isatty()
    start = time.monotonic()
    shown_lines = 0
    last_print = 0.0
    while (elapsed := time.monotonic() - start) < seconds:
        time.sleep(1.0)
        try:
            table = format_metrics(query_metrics(state, NAME))
        except Exception as e:  # the topology master may still be collecting its first bucket
            table = f"(waiting for metrics: {e})"
        header = f"word_count live: {elapsed:4.0f}s of {seconds:.0f}s"
        if tty:
            if shown_lines:
                sys.stdout.write(f"\x1b[{shown_lines}F\x1b[J")
            text = f"{header}\n{table}\n"
            sys.stdout.write(text)
            shown_lines = text.count("\n")
            sys.stdout.flush()
        elif elapsed - last_print >= 10:
            print(f"{header}\n{table}", flush=True)
            last_print = elapsed


def main() -> int:
    seconds = float(os.environ.get("DEMO_SECONDS", "30"))
    squall("validate", TOPOLOGY_FILE)
    squall("pack", TOPOLOGY_FILE)
    if any(t["name"] == NAME for t in json.loads(squall("list", "--json", quiet=True).stdout)):
        squall("kill", NAME)
    squall("submit", TOPOLOGY_FILE)
    try:
        live_view(seconds)
        squall("metrics", NAME)
        run_dir = json.loads(squall("show", NAME, "--json", quiet=True).stdout)["run_dir"]
    finally:
        squall("kill", NAME, check=False)
    report = squall(
        "report", "capacity", "--metrics", os.path.join(run_dir, "metrics"), "--topology", NAME,
        "--out", os.path.join(run_dir, "report"), check=False,
    )
    if report.returncode != 0:
        print("demo: the capacity report did not run (see above)", file=sys.stderr)
        return report.returncode
    print(f"\nthe demo's report: {os.path.join(run_dir, 'report', 'report.html')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
