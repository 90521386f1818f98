"""Scaling a running topology with update: only the difference changes, counts stay exact."""
import os
import time

from corpus import expected as expected_words
from e2e_harness import summed_counts as counted, wait_until

from squall.state import Kind, LocalStateManager


def test_update_scales_a_bolt_up_and_down_with_exact_counts(cluster, tmp_path):
    out = str(tmp_path / "out")
    os.mkdir(out)
    cluster.submit("wc_update", f"e2e.out.dir={out}")
    state = LocalStateManager(os.path.join(cluster.home, "state"))
    before = {i.id.task_id: i.pid for i in state.get(Kind.PHYSICAL_PLAN, "wc_update").instances}
    wait_until(lambda: sum(counted(out).values()) > 200, what="words to be counted")

    cluster.squall("update", "wc_update", "--component-parallelism", "count=3")
    physical = state.get(Kind.PHYSICAL_PLAN, "wc_update")
    count_tasks = [i for i in physical.instances if i.id.component == "count"]
    assert sorted(i.id.component_index for i in count_tasks) == [0, 1, 2]
    untouched = {i.id.task_id: i.pid for i in physical.instances if i.id.task_id in before}
    assert untouched == before, "update restarted instances it did not need to touch"

    cluster.squall("update", "wc_update", "--component-parallelism", "count=1")
    physical = state.get(Kind.PHYSICAL_PLAN, "wc_update")
    assert [i.id.component_index for i in physical.instances if i.id.component == "count"] == [0]

    expected = expected_words(1500)
    wait_until(lambda: sum(counted(out).values()) >= sum(expected.values()), timeout=90, what="all words counted")
    time.sleep(1.0)
    assert counted(out) == expected
    cluster.squall("kill", "wc_update")
