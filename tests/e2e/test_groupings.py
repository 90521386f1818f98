"""Every grouping's routing property, checked in one real multi-process run."""
import glob
import json
import os
from collections import defaultdict

from e2e_harness import wait_until

N = 600


def received(out_dir, component):
    """task -> list of (source task, n, key) for one sink component."""
    by_task = {}
    for path in glob.glob(os.path.join(out_dir, f"{component}-*.json")):
        task = int(path.rsplit("-", 1)[1][: -len(".json")])
        with open(path) as f:
            by_task[task] = [tuple(r) for r in json.load(f)]
    return by_task


def total(out_dir, component):
    return sum(len(v) for v in received(out_dir, component).values())


EXPECTED_TOTALS = {
    "shuffle_sink": N, "fields_sink": N, "all_sink": 2 * N, "global_sink": N, "none_sink": N,
    "direct_sink": N, "local_sink": N, "partial_sink": N, "custom_sink": N,
}


def test_every_grouping_routes_as_specified(cluster, tmp_path):
    out = str(tmp_path / "out")
    os.mkdir(out)
    cluster.submit("groupings", f"e2e.out.dir={out}")
    wait_until(lambda: all(total(out, c) >= n for c, n in EXPECTED_TOTALS.items()), timeout=120,
               what="every sink to receive every tuple")
    import time
    time.sleep(1.0)  # the window in which a duplicate would arrive: nothing signals that none is coming
    for component, n in EXPECTED_TOTALS.items():
        assert total(out, component) == n, component

    shown, _ = cluster.squall("show", "groupings", "--json")
    plan = json.loads(shown)["packing_plan"]
    tasks = defaultdict(list)
    container_of = {}
    for c in plan["containers"]:
        for i in c["instances"]:
            tasks[i["component"]].append(i["task_id"])
            container_of[i["task_id"]] = c["id"]
    for v in tasks.values():
        v.sort()
    every_n = list(range(N))

    # shuffle: each tuple once, spread evenly
    shuffle = received(out, "shuffle_sink")
    assert sorted(n for rows in shuffle.values() for _, n, _ in rows) == every_n
    assert all(0.25 * N <= len(rows) <= 0.42 * N for rows in shuffle.values()), {t: len(r) for t, r in shuffle.items()}

    # fields: each key seen by one task only
    owner = {}
    for task, rows in received(out, "fields_sink").items():
        for _, _, key in rows:
            assert owner.setdefault(key, task) == task, f"key {key} went to tasks {owner[key]} and {task}"
    assert len(owner) == 13

    # all: every task sees every tuple
    for task, rows in received(out, "all_sink").items():
        assert sorted(n for _, n, _ in rows) == every_n, task
    assert len(received(out, "all_sink")) == 2

    # global: only the lowest task
    glob_ = received(out, "global_sink")
    assert set(glob_) == {tasks["global_sink"][0]}

    # none: each tuple once, anywhere
    assert sorted(n for rows in received(out, "none_sink").values() for _, n, _ in rows) == every_n

    # direct: only the chosen task (the spout picks direct_sink task n % 2)
    for task, rows in received(out, "direct_sink").items():
        assert all(tasks["direct_sink"][n % 2] == task for _, n, _ in rows), task

    # local-or-shuffle: a sink task in the sender's container when there is one
    for task, rows in received(out, "local_sink").items():
        for source, n, _ in rows:
            local = [t for t in tasks["local_sink"] if container_of[t] == container_of[source]]
            if local:
                assert task in local, f"tuple {n} from task {source} went to another container's task {task}"

    # partial key: at most two tasks per key, each tuple once
    partial_owners = defaultdict(set)
    for task, rows in received(out, "partial_sink").items():
        for _, _, key in rows:
            partial_owners[key].add(task)
    assert all(1 <= len(t) <= 2 for t in partial_owners.values()), dict(partial_owners)

    # custom: n goes to target_tasks[n % 3]
    for task, rows in received(out, "custom_sink").items():
        assert all(tasks["custom_sink"][n % 3] == task for _, n, _ in rows), task

    cluster.squall("kill", "groupings")
