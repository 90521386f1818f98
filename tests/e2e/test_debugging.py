"""Debugging a running topology (docs/debugging.md): dynamic log levels and tuple sampling, end to end
through the CLI, on one run of tests/e2e/topologies/debugged.py.

Levels: a user logger set to DEBUG for one component shows in that component's tasks only, is taken
again by a task SIGKILLed while it lasts, and reverts when it runs out. Sampling: 10 % of the spout's
emits of a batch of a known size are in ``squall events --json`` with their values; after ``--off`` a
second batch adds none.
"""
import glob
import json
import os
import re
import time

import psutil
from e2e_harness import wait_until

from squall.state import Kind

TUPLES = 2000
DEBUG_LINE = re.compile(r" DEBUG \[c\d+ instance-\d+ (\d+)\] debugged\.(\w+): ")


def instance_logs(run_dir, component):
    return sorted(glob.glob(os.path.join(run_dir, "logs", "container-*", f"instance-*-{component}.log")))


def text_of(paths):
    return "".join(open(p, errors="replace").read() for p in paths)


def debug_pids(text, cls):
    """The pids that logged a DEBUG line of ``debugged.<cls>``."""
    return {int(m.group(1)) for m in DEBUG_LINE.finditer(text) if m.group(2) == cls}


def quiet(path, seconds):
    """``path`` exists and has not been written for ``seconds``."""
    try:
        return os.path.getmtime(path) < time.time() - seconds
    except OSError:
        return False


def events_of(cluster, *extra):
    out, _ = cluster.squall("events", "debugged", "--json", *extra)
    return json.loads(out)


def test_levels_follow_the_record_and_sampling_writes_its_share(cluster, tmp_path):
    out = str(tmp_path / "out")
    os.mkdir(out)
    cluster.submit("debugged", f"debug.out.dir={out}", f"debug.tuples={TUPLES}")
    run_dir = cluster.run_dir("debugged")
    ticking, numbers = instance_logs(run_dir, "ticking"), instance_logs(run_dir, "numbers")
    assert len(ticking) == 2 and len(numbers) == 1

    # bad input: one line, exit 2, nothing written
    for argv, error in ((["set-log-level", "debugged", "root=LOUD"], "unknown log level 'LOUD'"),
                        (["set-log-level", "debugged", "--component", "nosuch", "root=DEBUG"],
                         "unknown component 'nosuch'"),
                        (["set-log-level", "debugged", "root=DEBUG:-3"], "positive number of seconds"),
                        (["sample", "debugged", "--percent", "101"], "outside 0-100"),
                        (["set-log-level", "debugged", "--reset", "root"], "no level of logger 'root'")):
        _, err = cluster.squall(*argv, expect=2)
        assert error in err and len(err.strip().splitlines()) == 1, err
    with cluster.state() as state:
        assert state.get(Kind.DEBUG, "debugged") is None

    # without --component: every runtime process (the health manager's aside) takes it, and gives it back
    cluster.squall("set-log-level", "debugged", "squall.marker=ERROR")
    processes = [p for p in glob.glob(os.path.join(run_dir, "logs", "container-*", "*.log"))
                 if not p.endswith("health.log")]
    assert {os.path.basename(p).split("-")[0].split(".")[0] for p in processes} == {
        "executor", "tmaster", "metricsmgr", "stmgr", "instance"}
    wait_until(lambda: all("log level of squall.marker set to ERROR" in open(p).read() for p in processes),
               timeout=10, what="every process to set the level")
    cluster.squall("set-log-level", "debugged", "--reset", "squall.marker")
    wait_until(lambda: all("log level of squall.marker reverted to NOTSET" in open(p).read() for p in processes),
               timeout=10, what="every process to revert it")

    # sampling first, then the spout's first batch
    cluster.squall("sample", "debugged", "--component", "numbers", "--percent", "10")
    wait_until(lambda: "sampling 10% of its emits" in text_of(numbers), timeout=10, what="sampling on in the spout")
    shown, _ = cluster.squall("set-log-level", "debugged", "--component", "ticking", "debugged=DEBUG:10")
    assert "debugged=DEBUG in component ticking until" in shown
    open(os.path.join(out, "go-1"), "w").close()

    pids = wait_until(lambda: len(debug_pids(text_of(ticking), "Ticking")) == 2 and debug_pids(text_of(ticking),
                                                                                               "Ticking"),
                      timeout=10, what="both ticking tasks logging at DEBUG")
    assert not debug_pids(text_of(numbers), "Numbers"), "the spout's logger is not at DEBUG"
    view = json.loads(cluster.squall("show", "debugged", "--json")[0])["debug"]
    assert [(e["logger"], e["level"], e["component"]) for e in view["levels"]] == [("debugged", "DEBUG", "ticking")]

    # a task killed while the level lasts takes it again
    victim = psutil.Process(sorted(pids)[0])
    victim.kill()
    wait_until(lambda: debug_pids(text_of(ticking), "Ticking") - pids, timeout=20,
               what="the restarted ticking task logging at DEBUG")

    # the first batch's share of the spout's emits, with their values
    wait_until(lambda: os.path.exists(os.path.join(out, "done-1")), timeout=30, what="the first batch emitted")
    events_file = os.path.join(os.path.dirname(numbers[0]), "events.log")
    wait_until(lambda: quiet(events_file, 1.0), timeout=10, what="the events log written")
    events = events_of(cluster, "--component", "numbers")
    assert 0.07 * TUPLES <= len(events) <= 0.13 * TUPLES, len(events)
    assert all(e["values"] == [e["id"], f"text-{e['id']}"] and e["stream"] == "default" for e in events)
    assert len({e["id"] for e in events}) == len(events) and all(0 <= e["id"] < TUPLES for e in events)
    assert events_of(cluster, "--component", "ticking") == []
    last, _ = cluster.squall("events", "debugged", "--limit", "1")
    assert re.fullmatch(r"\S+ \S+ numbers\[\d+\] default id=(\d+) \[\1, \"text-\1\"\]\n", last), last

    # off: a second batch adds nothing
    cluster.squall("sample", "debugged", "--off")
    wait_until(lambda: "sampling off" in text_of(numbers), timeout=10, what="sampling off in the spout")
    open(os.path.join(out, "go-2"), "w").close()
    wait_until(lambda: os.path.exists(os.path.join(out, "done-2")), timeout=30, what="the second batch emitted")
    assert len(events_of(cluster)) == len(events)

    # the level runs out: every ticking task reverts, and logs no DEBUG line after it
    wait_until(lambda: all("log level of debugged reverted" in open(p).read() for p in ticking), timeout=20,
               what="the level reverted in every ticking task (the survivor and the restarted one)")
    wait_until(lambda: all(re.search(r"reverted to NOTSET(.|\n)*ticked \d+ times", open(p).read()) for p in ticking),
               timeout=10, what="ticks logged at INFO after the revert")
    for path in ticking:
        after = open(path).read().rsplit("log level of debugged reverted", 1)[1]
        assert not debug_pids(after, "Ticking"), f"DEBUG lines after the revert in {path}"
    assert json.loads(cluster.squall("show", "debugged", "--json")[0])["debug"]["levels"] == []
    cluster.squall("kill", "debugged")
    with cluster.state() as state:
        assert state.get(Kind.DEBUG, "debugged") is None  # killed with the topology's other records
