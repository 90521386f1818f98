"""Scaling a running topology with update: only the difference changes, counts stay exact."""
import json
import os
import time

from corpus import expected as expected_words
from e2e_harness import pace, summed_counts as counted, wait_until

from squall.state import Kind, LocalStateManager


def test_an_update_that_splits_a_chain_replaces_its_process_and_counts_stay_exact(cluster, tmp_path):
    """sentences -> split run chained; split at parallelism 2 cannot be: the chain's process stops before
    its tasks' new processes start (one process per task at a time), and the topology is RUNNING again."""
    out = str(tmp_path / "out")
    os.mkdir(out)
    cluster.submit("wc_update", f"e2e.out.dir={out}")
    shown = json.loads(cluster.squall("show", "wc_update", "--json")[0])
    assert shown["chains"] == [["sentences", "split"]]
    wait_until(lambda: sum(counted(out).values()) > 200, what="words to be counted")

    cluster.squall("update", "wc_update", "--component-parallelism", "split=2")
    shown = json.loads(cluster.squall("show", "wc_update", "--json")[0])
    assert shown["status"] == "RUNNING" and shown["chains"] == []
    state = LocalStateManager(os.path.join(cluster.home, "state"))
    pids = {i.id.component: i.pid for i in state.get(Kind.PHYSICAL_PLAN, "wc_update").instances
            if i.id.component in ("sentences", "split")}
    assert pids["sentences"] != pids["split"]
    pace(out, 500)  # the split is over: the rest of the corpus at 500 sentences/s, not 100

    expected = expected_words(1500)
    wait_until(lambda: sum(counted(out).values()) >= sum(expected.values()), timeout=90, what="all words counted")
    time.sleep(1.0)  # the window in which a duplicate would arrive: nothing signals that none is coming
    assert counted(out) == expected
    cluster.squall("kill", "wc_update")


BAD_UPDATES = [
    (["--component-parallelism", "nope=2"], "topology 'wc_update' has no component 'nope'"),
    (["--component-parallelism", "count=0"], "--component-parallelism count=0: must be a positive integer"),
    (["--component-cpu", "count=lots"], "--component-cpu 'count=lots': expected COMPONENT=N with N a number"),
    (["--config-property", "count:topology.max.spout.pending=5"],
     "other keys take a resubmit"),
    (["--component-ram", "count=-5"], "squall.component.ram.mb (--config-property count:squall.component.ram.mb): "
                                      "must be >= 0, got -5"),
    (["--component-ram", "count=100000"], "cannot update topology 'wc_update': "),
]


def test_updates_refused_then_past_the_container_caps_then_down_with_exact_counts(cluster, tmp_path):
    """One running topology: every bad update of BAD_UPDATES refused in one line, changing nothing; then
    count 2 -> 12, resized, past the container's caps (a second container; nothing that stays restarts);
    then down to 1 (the second container given back); the counts stay exact."""
    out = str(tmp_path / "out")
    os.mkdir(out)
    cluster.submit("wc_update", f"e2e.out.dir={out}", "squall.packing.algorithm=ffd")
    state = cluster.state()
    plan, topology = state.get(Kind.PACKING_PLAN, "wc_update"), state.get(Kind.TOPOLOGY, "wc_update")
    assert len(plan.containers) == 1
    before = {i.id.task_id: i.pid for i in state.get(Kind.PHYSICAL_PLAN, "wc_update").instances}
    for argv, message in BAD_UPDATES:
        _, err = cluster.squall("update", "wc_update", *argv, expect=2)
        assert message in err and len(err.strip().splitlines()) == 1, (argv, err)
        assert state.get(Kind.PACKING_PLAN, "wc_update") == plan, f"update {argv} changed the packing plan"
        assert state.get(Kind.TOPOLOGY, "wc_update") == topology, f"update {argv} changed the topology"
    wait_until(lambda: sum(counted(out).values()) > 200, what="words to be counted")

    grow = ["--component-parallelism", "count=12", "--component-cpu", "count=0.25", "--component-ram", "count=128"]
    shown, _ = cluster.squall("update", "wc_update", *grow, "--dry-run")
    assert "  count            parallelism  2 -> 12\n" in shown
    assert "  count            cpu          0.5 -> 0.25 cores\n" in shown
    assert "  count            ram_mb       256 -> 128 MiB\n" in shown
    assert "1 -> 2 containers (1 new, 0 removed)" in shown and shown.rstrip().endswith("dry run: nothing applied")
    assert state.get(Kind.PACKING_PLAN, "wc_update") == plan, "a dry run changed the plan"

    cluster.squall("update", "wc_update", *grow)
    plan = state.get(Kind.PACKING_PLAN, "wc_update")
    counts = [i for c in plan.containers for i in c.instances if i.id.component == "count"]
    assert len(plan.containers) == 2 and len(counts) == 12
    assert {(i.resources.cpu, i.resources.ram_mb) for i in counts} == {(0.25, 128)}
    physical = state.get(Kind.PHYSICAL_PLAN, "wc_update")
    assert physical.packing_plan_id == plan.id and len(physical.instances) == 14
    kept = {i.id.task_id: i.pid for i in physical.instances if i.id.task_id in before}
    assert kept == before, "resizing instances restarted ones that stayed in their container"
    assert json.loads(cluster.squall("show", "wc_update", "--json")[0])["status"] == "RUNNING"

    cluster.squall("update", "wc_update", "--component-parallelism", "count=1")
    plan = state.get(Kind.PACKING_PLAN, "wc_update")
    assert len(plan.containers) == 1
    physical = state.get(Kind.PHYSICAL_PLAN, "wc_update")
    assert [i.id.component_index for i in physical.instances if i.id.component == "count"] == [0]
    pace(out, 500)  # the updates are over: the rest of the corpus at 500 sentences/s, not 100

    expected = expected_words(1500)
    wait_until(lambda: sum(counted(out).values()) >= sum(expected.values()), timeout=90, what="all words counted")
    time.sleep(1.0)  # the window in which a duplicate would arrive: nothing signals that none is coming
    assert counted(out) == expected
    cluster.squall("kill", "wc_update")
