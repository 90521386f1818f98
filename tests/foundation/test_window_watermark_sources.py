"""Watermarks per sub-source of an upstream task (``WindowedBolt.watermark_fields``): a Kafka spout task
interleaves its partitions, and each partition should hold the watermark back on its own."""
import pytest
import window_components as wc

from squall import Grouping, TopologyBuilder, TopologyError, Window
from squall.window_state import Windower


def feed(w, items, source, now=0.0):
    late, fired = [], []
    for ts, name in items:
        is_late, out = w.on_tuple((ts, name), ts, source, 1e12, now)
        if is_late:
            late.append(name)
        fired += [(f.view.start, f.view.end, sorted(n for _, n in f.view.tuples)) for f in out]
    return late, fired


def test_a_partition_behind_another_of_the_same_task_is_not_late():
    by_task = Windower(Window.tumbling(duration=10), timestamped=True)
    by_task.expect([1], 0.0)
    feed(by_task, [(25, "p0")], 1)
    assert feed(by_task, [(5, "p1")], 1)[0] == ["p1"]  # one source per task: partition 1 is made late

    by_partition = Windower(Window.tumbling(duration=10), timestamped=True)
    by_partition.expect([1], 0.0)
    feed(by_partition, [(3, "p0")], (1, "t", 0))
    assert by_partition.watermark.value == 3  # the task's placeholder gave way to its first partition
    feed(by_partition, [(4, "p1")], (1, "t", 1))
    assert feed(by_partition, [(25, "p0b")], (1, "t", 0)) == ([], [])
    assert by_partition.watermark.value == 4  # partition 1 (at 4) holds it
    assert feed(by_partition, [(5, "p1b")], (1, "t", 1)) == ([], [])  # behind partition 0, not late
    assert feed(by_partition, [(12, "p1c")], (1, "t", 1))[1] == [(0, 10, ["p0", "p1", "p1b"])]


def test_a_partition_not_heard_from_yet_is_not_waited_for():
    """The limit: the bolt learns a task's partitions from their tuples (it cannot know them before)."""
    w = Windower(Window.tumbling(duration=10), timestamped=True)
    w.expect([1], 0.0)
    feed(w, [(25, "p0")], (1, "t", 0))
    assert feed(w, [(5, "p1")], (1, "t", 1))[0] == ["p1"]


def test_an_idle_partition_stops_holding_the_watermark_after_the_timeout():
    w = Windower(Window.tumbling(duration=10), timestamped=True, idle_timeout=5.0)
    w.expect([1], 0.0)
    feed(w, [(3, "a")], (1, "t", 0), now=1.0)
    feed(w, [(4, "b")], (1, "t", 1), now=1.0)
    assert feed(w, [(15, "c")], (1, "t", 0), now=2.0)[1] == []  # partition 1 (at 4) holds [0, 10)
    assert feed(w, [(16, "d")], (1, "t", 0), now=7.0)[1] == [(0, 10, ["a", "b"])]  # idle for 6 s


def test_a_plan_change_drops_the_partitions_of_a_task_that_left():
    w = Windower(Window.tumbling(duration=10), timestamped=True)
    w.expect([1, 2], 0.0)
    feed(w, [(3, "a")], (1, "t", 0))
    feed(w, [(30, "b")], (2, "t", 1))
    assert w.watermark.value == 3
    w.expect([1, 2], 1.0)  # a tick: the tasks heard through their partitions stay as they are
    assert set(w.watermark.tasks) == {(1, "t", 0), (2, "t", 1)}
    w.expect([2], 2.0)
    assert feed(w, [(31, "c")], (2, "t", 1))[1] == [(0, 10, ["a"])]


class ByPartition(wc.Totals):
    watermark_fields = ("key",)


class NotAField(wc.Totals):
    watermark_fields = ("partition",)


class NotATuple(wc.Totals):
    watermark_fields = "key"


class ProcessingTimeSources(wc.ProcessingTotals):
    watermark_fields = ("key",)


def build(bolt):
    b = TopologyBuilder("t")
    s = b.add_spout("stamps", wc.StampedSpout)
    b.add_bolt("totals", bolt, inputs={s: Grouping.fields("key")})
    return b.build()


def test_watermark_fields_are_checked_at_build():
    build(ByPartition)
    for bolt, message in [
        (NotAField, r"NotAField.watermark_fields names 'partition', but input stream stamps/default declares"),
        (NotATuple, r"NotATuple.watermark_fields must be a tuple of field names, got 'key'"),
        (ProcessingTimeSources, r"watermark_fields without event time"),
    ]:
        with pytest.raises(TopologyError, match=message):
            build(bolt)
