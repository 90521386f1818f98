"""The topology master's metrics store: windows, percentiles, capacity, series and user errors, pure."""
import json

import pytest

from squall.idl import schema
from squall.runtime.metrics_store import ERRORS_KEPT, MetricsStore, percentile
from squall.runtime.user_errors import PER_BUCKET, UserErrors


def row(ts, task=1, component="split", executed=100, emitted=200, latency=1.0, secs=5.0, queue=0, bp=0.0,
        cpu=None, rss=None, user="{}", acked=0, complete=None):
    return schema.MetricsRow(ts=ts, interval_secs=secs, process="instance", component=component, task_id=task,
                             emit_count=emitted, execute_count=executed, ack_count=acked, fail_count=0,
                             execute_latency_ms=latency, process_latency_ms=latency * 2,
                             complete_latency_ms=complete, queue_depth=queue, backpressure_ms=bp, user=user,
                             pid=1, container=1, cpu_percent=cpu, rss_mb=rss)


def test_a_window_counts_only_its_buckets_and_rates_are_over_their_seconds():
    store = MetricsStore()
    for k in range(1, 25):  # two minutes of 5 s buckets: 100 executed each, the last 12 at 200
        store.add(row(1000.0 + 5 * k, executed=100 if k <= 12 else 200))
    now = 1120.0
    last_minute = store.response(window_secs=60, now=now).tasks[0]
    assert last_minute.executed == 12 * 200 and last_minute.window_secs == 60.0
    assert last_minute.execute_rate == pytest.approx(200 / 5)
    everything = store.response(now=now).tasks[0]
    assert everything.executed == 12 * 100 + 12 * 200
    assert everything.execute_rate == pytest.approx(200 / 5)  # since start: the last bucket's rate


def test_percentiles_are_of_bucket_means_weighted_by_their_tuples():
    store = MetricsStore()
    for k in range(99):
        store.add(row(1000.0 + k, executed=10, latency=1.0, secs=1.0))
    store.add(row(1099.0, executed=10, latency=50.0, secs=1.0))  # one slow bucket in a hundred
    task = store.response(window_secs=120, now=1100.0).tasks[0]
    assert task.execute_latency_p50_ms == 1.0
    assert task.execute_latency_p99_ms == 1.0  # 1% of the tuples is not above the 99th percentile
    # past BUCKETS_SECS a window reads minutes: 1080-1099's mean is (19 x 10 x 1 + 10 x 50) / 200 tuples
    assert store.response(window_secs=600, now=1100.0).tasks[0].execute_latency_p99_ms == 3.45
    store.add(row(1100.0, executed=30, latency=50.0, secs=1.0))
    task = store.response(window_secs=120, now=1100.0).tasks[0]
    assert task.execute_latency_p99_ms == 50.0 and task.execute_latency_p50_ms == 1.0
    assert percentile([(3.0, 1), (1.0, 1), (2.0, 2)], 0.5) == 2.0 and percentile([], 0.5) is None


def test_capacity_is_the_busy_fraction_and_a_component_takes_its_busiest_task():
    store = MetricsStore()
    for k in range(1, 13):
        store.add(row(1000.0 + 5 * k, task=1, executed=1000, latency=2.5, cpu=50.0, rss=30.0, queue=k))  # 2.5 s of 5 s
        store.add(row(1000.0 + 5 * k, task=2, executed=1000, latency=1.0, cpu=20.0, rss=20.0, bp=500.0))
    resp = store.response(window_secs=60, now=1060.0)
    busy = {t.task_id: t.capacity for t in resp.tasks}
    assert busy[1] == pytest.approx(0.5) and busy[2] == pytest.approx(0.2)
    comp = resp.components[0]
    assert comp.capacity == pytest.approx(0.5) and comp.backpressure_ms == pytest.approx(12 * 500.0)
    assert comp.cpu_percent == pytest.approx(70.0) and comp.rss_mb == pytest.approx(50.0)
    assert comp.queue_depth == 12 and comp.queue_depth_max == 12
    assert comp.execute_rate == pytest.approx(2 * 1000 / 5)


def test_past_ten_minutes_the_window_reads_minutes_and_an_hour_is_kept():
    store = MetricsStore()
    for k in range(1, 1441):  # two hours of 5 s buckets
        store.add(row(k * 5.0, executed=10))
    task = store.response(window_secs=3600, now=7200.0).tasks[0]
    assert 3600 <= task.window_secs <= 3660 and task.executed == pytest.approx(task.window_secs / 5 * 10)
    assert len(store.tasks[1].fine) <= 121 and len(store.tasks[1].minutes) <= 62
    assert store.response(now=7200.0).tasks[0].executed == 14400  # totals since start stay exact


def test_series_spreads_each_bucket_over_the_steps_it_spans():
    store = MetricsStore()
    for k in range(1, 13):
        store.add(row(1000.0 + 5 * k, task=1, executed=50))
        store.add(row(1002.5 + 5 * k, task=2, executed=50))  # buckets out of step with task 1's
    # the last bucket's seconds are left out: not every task has reported them yet
    points = store.response(window_secs=60, series=True, now=1060.0).series
    assert len(points) == 55 and points[-1].ts == 1054.0
    assert all(p.component == "split" and p.secs == 1.0 for p in points)
    assert sum(p.executed for p in points) == pytest.approx(11 * 50 + 10 * 50 + 25, abs=2)
    assert max(p.executed for p in points[3:]) == min(p.executed for p in points[3:]) == 20  # 10 a task
    ten = store.response(window_secs=600, series=True, now=1060.0).series
    assert [p.ts for p in ten] == [1000.0 + 10 * k for k in range(5)] and all(p.secs == 10.0 for p in ten)
    assert sum(p.executed for p in ten) == pytest.approx(10 * 50 + 9 * 50 + 25, abs=2)


def test_user_errors_travel_in_the_row_and_the_last_ones_are_kept():
    errors = UserErrors()
    for i in range(PER_BUCKET + 3):
        try:
            raise ValueError(f"bad word {i}")
        except ValueError:
            errors.record("process(): the tuple failed")
    user = {}
    errors.report(user)
    assert user["__error-count"] == PER_BUCKET + 3 and len(user["__errors"]) == PER_BUCKET
    first = user["__errors"][0]
    assert first["error"] == "ValueError: bad word 0" and "test_metrics_store.py" in first["traceback"]
    empty = {}
    errors.report(empty)
    assert empty == {}  # the next bucket reports only its own

    store = MetricsStore()
    for k in range(5):
        store.add(row(1000.0 + k, user=json.dumps(user)))
    resp = store.response()
    task = resp.tasks[0]
    assert task.error_count == 5 * (PER_BUCKET + 3) and len(task.errors) == min(ERRORS_KEPT, 5 * PER_BUCKET)
    assert task.errors[-1].error == "ValueError: bad word 4" and task.errors[-1].where.startswith("process()")
    assert resp.components[0].errors[-1].error == "ValueError: bad word 4"


def test_a_source_spouts_partitions_are_answered_as_each_task_last_reported_them():
    from squall.metrics import SOURCE_PARTITIONS, SourcePartitions

    lags = {"events-0": 40, "events-2": None}
    metric = SourcePartitions(lambda: lags)
    metric.read("events-0", 10, 1000)
    metric.read("events-0", 5, 500)
    first = metric.get_value_and_reset()
    assert set(first) == {"events-0", "events-2"}
    assert first["events-0"]["lag"] == 40 and first["events-0"]["records_per_sec"] > 0
    assert first["events-2"] == {"lag": None, "records_per_sec": 0.0, "bytes_per_sec": 0.0}
    assert metric.get_value_and_reset()["events-0"]["records_per_sec"] == 0.0  # reset with the bucket

    store = MetricsStore()
    store.add(row(1000.0, task=3, component="kafka", user=json.dumps({SOURCE_PARTITIONS: first})))
    store.add(row(1000.0, task=4, component="kafka", user=json.dumps(
        {SOURCE_PARTITIONS: {"events-1": {"lag": 7, "records_per_sec": 2.5, "bytes_per_sec": 250.0}}})))
    store.add(row(1005.0, task=3, component="kafka", user=json.dumps(
        {SOURCE_PARTITIONS: {"events-0": {"lag": 0, "records_per_sec": 3.0, "bytes_per_sec": 300.0}}})))
    store.add(row(1005.0, task=5, component="split"))
    sources = store.response().sources
    assert [(p.partition, p.task_id, p.lag, p.records_per_sec, p.ts) for p in sources] == [
        ("events-0", 3, 0, 3.0, 1005.0), ("events-1", 4, 7, 2.5, 1000.0)]
    assert store.response(component="split").sources is None


def test_asked_for_some_tasks_the_answer_has_their_rows_and_those_with_errors_and_components_sum_all():
    errors = UserErrors()
    try:
        raise ValueError("bad word")
    except ValueError:
        errors.record("process(): the tuple failed")
    user = {}
    errors.report(user)
    store = MetricsStore()
    for task in range(1, 101):
        store.add(row(1000.0, task=task, executed=10, user=json.dumps(user) if task == 77 else "{}"))
    whole = store.response()
    some = store.response(task_ids=[3, 4])
    assert [t.task_id for t in whole.tasks] == list(range(1, 101))
    assert [t.task_id for t in some.tasks] == [3, 4, 77]
    assert [t.task_id for t in store.response(task_ids=[]).tasks] == [77]
    assert some.components == whole.components and some.components[0].executed == 1000


def test_a_reliable_spouts_open_trees_are_its_last_report_and_a_component_sums_them():
    store = MetricsStore()
    for k, (first, second) in enumerate([(10, 7), (95, 40)]):  # each spout task's __pending, bucket by bucket
        store.add(row(1000.0 + 5 * k, task=1, component="spout", user=json.dumps({"__pending": first})))
        store.add(row(1000.0 + 5 * k, task=2, component="spout", user=json.dumps({"__pending": second})))
    store.add(row(1005.0, task=3, component="split"))
    answer = store.response(window_secs=60)
    assert {t.task_id: t.pending for t in answer.tasks} == {1: 95, 2: 40, 3: None}
    assert {c.component: c.pending for c in answer.components} == {"spout": 135, "split": None}
