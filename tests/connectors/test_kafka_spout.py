"""The KafkaSpout driven by hand against the test broker (the mock cluster, or SQUALL_TEST_KAFKA): records
produced into a topic come out as tuples with their exact (partition, offset), in every delivery mode,
across rollbacks, rescales, failures and backpressure.

The spout runs in this process with a collector that keeps what it emits (the runtime's part); the
broker, the consumer and the offsets are real.
"""
import json
import os
import time

import pytest

from squall.component import TopologyContext
from squall.stateful import KeyValueState

ck = pytest.importorskip("confluent_kafka")

from squall.connectors.kafka import KafkaSpout  # noqa: E402
from squall.testing import wait_until  # noqa: E402

PARTITIONS = 4


class Capture:
    """The collector: every emit, by stream, with its id."""

    def __init__(self):
        self.tuples = []
        self.errors = []
        self.problems = []  # report_error: shown as the task's errors by squall show and the UI

    def emit(self, values, stream, tup_id, anchors, direct_task):
        (self.errors if stream == "errors" else self.tuples).append((list(values), tup_id))
        return ()

    def report_error(self, where, error):
        self.problems.append((where, error))

    def offsets(self):
        return [(v[3], v[4]) for v, _ in self.tuples]


def produce(bootstrap, topic, n, value=lambda i: f"v{i}", start=0):
    p = ck.Producer({"bootstrap.servers": bootstrap})
    for i in range(start, start + n):
        p.produce(topic, key=f"k{i}", value=value(i), partition=i % PARTITIONS)
    assert p.flush(10) == 0


def spout(bootstrap, topic, mode="EFFECTIVELY_ONCE", task=1, tasks=(1,), group="g", **keys):
    s = KafkaSpout()
    s.attach(Capture())
    config = {"kafka.bootstrap.servers": bootstrap, "kafka.topics": topic, "kafka.group.id": group,
              "topology.reliability.mode": mode, "kafka.start": "earliest", **keys}
    s.initialize(config, TopologyContext("t", task, "kafka", {"kafka": list(tasks)}, config))
    return s


def run(s, want, what="records"):
    """next_tuple until ``want`` tuples have been emitted in all."""
    wait_until(lambda: s.next_tuple() or len(s._collector.tuples) >= want, timeout=30, interval=0,
               what=f"{want} {what} (got {len(s._collector.tuples)})")


def read_acking(s, want, what):
    """next_tuple, acking each tuple as it comes, until ``want`` tuples have been emitted in all."""
    acked = 0

    def ack_all():
        nonlocal acked
        s.next_tuple()
        for _, tup_id in s._collector.tuples[acked:]:
            s.ack(tup_id)
        acked = len(s._collector.tuples)
        return acked >= want

    wait_until(ack_all, timeout=30, interval=0, what=what)


def quiet(s, calls=50):
    """next_tuple a while, for records that should not come."""
    for _ in range(calls):
        s.next_tuple()


def every(n):
    return sorted((i % PARTITIONS, i // PARTITIONS) for i in range(n))


def test_records_are_emitted_once_each_with_their_fields(kafka_bootstrap, topic_name):
    produce(kafka_bootstrap, topic_name, 100)
    s = spout(kafka_bootstrap, topic_name)
    s.init_state(KeyValueState())
    try:
        run(s, 100)
        quiet(s)
        got = s._collector.tuples
        assert sorted(s._collector.offsets()) == every(100)
        for values, tup_id in got:
            key, value, topic, partition, offset, ts = values
            i = offset * PARTITIONS + partition
            assert (key, value, topic, tup_id) == (f"k{i}", f"v{i}", topic_name, None)
            assert isinstance(ts, int) and ts > 1_600_000_000_000  # ms
    finally:
        s.close()


def test_effectively_once_a_rollback_resumes_exactly_at_the_saved_positions(kafka_bootstrap, topic_name):
    produce(kafka_bootstrap, topic_name, 200)
    s = spout(kafka_bootstrap, topic_name)
    state = KeyValueState()
    s.init_state(state)
    try:
        run(s, 80)
        s.pre_save(1)
        saved = dict(state.items())
        assert sorted(saved) == [(topic_name, p) for p in range(PARTITIONS)]
        before = list(s._collector.tuples)
        run(s, 150)
        s.post_save(1)  # the checkpoint is complete: its positions go to the group
        wait_until(lambda: s.next_tuple() or committed(kafka_bootstrap, topic_name, "g") == saved, timeout=10,
                   what="the checkpoint's offsets committed to the group")
        # the rollback: the runtime hands the checkpoint's state back to init_state
        s._collector.tuples = []
        s.init_state(KeyValueState(dict(saved)))
        assert sum(saved.values()) == len(before)
        run(s, 200 - len(before), "records after the rollback")
        quiet(s)
        after = s._collector.offsets()
        assert sorted(before_offsets(before) + after) == every(200)  # exactly once across the rollback
    finally:
        s.close()


def before_offsets(tuples):
    return [(v[3], v[4]) for v, _ in tuples]


def committed(bootstrap, topic, group):
    c = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        got = c.committed([ck.TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=10)
        return {(tp.topic, tp.partition): tp.offset for tp in got if tp.offset >= 0}
    finally:
        c.close()


def test_a_rescale_splits_the_union_state_and_no_record_is_lost_or_read_twice(kafka_bootstrap, topic_name):
    produce(kafka_bootstrap, topic_name, 120)
    old = [spout(kafka_bootstrap, topic_name, task=t, tasks=(1, 2)) for t in (1, 2)]
    states = [KeyValueState(), KeyValueState()]
    for s, st in zip(old, states):
        s.init_state(st)
    for s in old:
        run(s, 20)
        s.pre_save(1)
    union = {k: v for st in states for k, v in st.items()}
    assert len(union) == PARTITIONS and all(len(st) == 2 for st in states)
    before = [o for s in old for o in s._collector.offsets()]
    for s in old:
        s.close()
    new = [spout(kafka_bootstrap, topic_name, task=t, tasks=(1, 2, 3)) for t in (1, 2, 3)]
    try:
        kept = []
        for s in new:
            st = KeyValueState(dict(union))  # every task gets the union, and keeps its partitions' keys
            s.init_state(st)
            kept.append(sorted(st.keys()))
        assert sorted(k for ks in kept for k in ks) == sorted(union) and sorted(len(k) for k in kept) == [1, 1, 2]
        wait_until(lambda: [s.next_tuple() for s in new] and
                   sum(len(s._collector.tuples) for s in new) >= 120 - len(before), timeout=30, interval=0,
                   what="the rest of the records from the new tasks")
        for s in new:
            quiet(s)
        after = [o for s in new for o in s._collector.offsets()]
        assert sorted(before + after) == every(120)
    finally:
        for s in new:
            s.close()


def test_at_least_once_failed_records_come_again_and_the_checkpoint_saves_only_acked_offsets(
        kafka_bootstrap, topic_name):
    produce(kafka_bootstrap, topic_name, 40)
    s = spout(kafka_bootstrap, topic_name, mode="ATLEAST_ONCE", **{"kafka.retry.initial.secs": 0.01})
    state = KeyValueState()
    s.init_state(state)
    try:
        run(s, 40)
        quiet(s)
        ids = [tup_id for _, tup_id in s._collector.tuples]
        assert sorted((p, o) for _, p, o in ids) == every(40) and all(t == topic_name for t, _, _ in ids)
        failed = [i for i in ids if i[2] == 3]  # offset 3 of every partition fails
        for tup_id in ids:
            (s.fail if tup_id in failed else s.ack)(tup_id)
        s.pre_save(1)
        assert dict(state.items()) == {(topic_name, p): 3 for p in range(PARTITIONS)}
        s._collector.tuples = []
        run(s, len(failed), "retries")
        assert sorted(tup_id for _, tup_id in s._collector.tuples) == sorted(failed)
        for tup_id in failed:
            s.ack(tup_id)
        s.pre_save(2)
        assert dict(state.items()) == {(topic_name, p): 10 for p in range(PARTITIONS)}
        # a rollback to checkpoint 1 replays everything past its committable offsets
        s._collector.tuples = []
        s.init_state(KeyValueState({(topic_name, p): 3 for p in range(PARTITIONS)}))
        run(s, 28, "the replay")
        quiet(s)
        assert sorted(s._collector.offsets()) == sorted((p, o) for p in range(PARTITIONS) for o in range(3, 10))
    finally:
        s.close()


def test_at_least_once_acked_offsets_are_committed_to_the_group_on_a_timer_and_a_failed_commit_again(
        kafka_bootstrap, topic_name):
    """An asynchronous commit can fail (a coordinator moving, a request timing out): its offsets must go
    again at the next interval, though no ack moved them since."""
    from confluent_kafka.admin import AdminClient

    produce(kafka_bootstrap, topic_name, 20)
    s = spout(kafka_bootstrap, topic_name, mode="ATLEAST_ONCE", group="timer",
              **{"kafka.commit.interval.secs": 0.05})
    s.init_state(KeyValueState())
    try:
        run(s, 20)
        for _, tup_id in s._collector.tuples:
            if tup_id[2] != 4:
                s.ack(tup_id)
        want = {(topic_name, p): 4 for p in range(PARTITIONS)}
        wait_until(lambda: s.next_tuple() or committed(kafka_bootstrap, topic_name, "timer") == want, timeout=20,
                   what="offsets up to the first unacked record committed")
        # the group loses the commit, and librdkafka answers the spout's commit with an error
        lost = [ck.TopicPartition(topic_name, p, 0) for p in range(PARTITIONS)]
        admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
        for future in admin.alter_consumer_group_offsets([ck.ConsumerGroupTopicPartitions("timer", lost)]).values():
            future.result(10)
        assert committed(kafka_bootstrap, topic_name, "timer") == {tp: 0 for tp in want}
        s._on_commit(ck.KafkaError(ck.KafkaError.REQUEST_TIMED_OUT),
                     [ck.TopicPartition(topic_name, p, 4) for p in range(PARTITIONS)])
        wait_until(lambda: s.next_tuple() or committed(kafka_bootstrap, topic_name, "timer") == want, timeout=20,
                   what="the failed commit sent again")
        assert s.client_errors.values.get("REQUEST_TIMED_OUT") == 1
    finally:
        s.close()


def test_at_least_once_a_partition_with_too_many_open_records_is_paused_until_acks(kafka_bootstrap, topic_name):
    produce(kafka_bootstrap, topic_name, 400)
    s = spout(kafka_bootstrap, topic_name, mode="ATLEAST_ONCE", **{"kafka.max.uncommitted.per.partition": 10,
                                                                  "kafka.batch.size": 4})
    s.init_state(KeyValueState())
    try:
        quiet(s, 400)
        open_per_partition = {p: len(part) for (_, p), part in s.open.items()}
        assert all(10 <= n < 20 for n in open_per_partition.values()), open_per_partition
        read_acking(s, 400, "the rest, read as acks free the partitions")
        assert sorted(s._collector.offsets()) == every(400)
    finally:
        s.close()


def test_a_rollback_reads_again_the_partitions_that_were_paused(kafka_bootstrap, topic_name):
    """librdkafka keeps a partition's pause across unassign and assign: a rollback that re-assigns a
    partition paused as full (or by backpressure) must resume it, or the task never reads again."""
    produce(kafka_bootstrap, topic_name, 200)
    s = spout(kafka_bootstrap, topic_name, mode="ATLEAST_ONCE", **{"kafka.max.uncommitted.per.partition": 10,
                                                                  "kafka.batch.size": 4})
    s.init_state(KeyValueState())
    try:
        quiet(s, 200)
        assert s.full, "no partition filled up"
        s.on_backpressure(True)
        s.on_backpressure(False)
        s.init_state(KeyValueState())  # a rollback to the empty state: every record again, nothing acked
        s._collector.tuples.clear()
        read_acking(s, 200, "every record read again after the rollback")
        assert sorted(s._collector.offsets()) == every(200)
    finally:
        s.close()


def test_at_most_once_offsets_are_committed_before_the_records_are_emitted(kafka_bootstrap, topic_name):
    produce(kafka_bootstrap, topic_name, 60)
    s = spout(kafka_bootstrap, topic_name, mode="ATMOST_ONCE", group="amo")
    s.init_state(KeyValueState())
    try:
        run(s, 30)
        emitted = s._collector.offsets()
        group = committed(kafka_bootstrap, topic_name, "amo")
        for p in range(PARTITIONS):  # nothing emitted is past what the group has
            assert max((o for q, o in emitted if q == p), default=-1) < group.get((topic_name, p), 0)
        s.init_state(KeyValueState())  # a rollback in the same process re-emits nothing
        run(s, 60)
        quiet(s)
        first = sorted(s._collector.offsets())
        assert first == every(60)
    finally:
        s.close()
    restarted = spout(kafka_bootstrap, topic_name, mode="ATMOST_ONCE", group="amo")
    restarted.init_state(KeyValueState())  # a restarted task reads on from the group's offsets
    try:
        quiet(restarted)
        assert restarted._collector.tuples == []
    finally:
        restarted.close()


def test_bad_records_go_to_the_error_stream_and_are_counted(kafka_bootstrap, topic_name):
    produce(kafka_bootstrap, topic_name, 8, value=lambda i: b"\xff" if i == 5 else json.dumps({"i": i}))
    s = spout(kafka_bootstrap, topic_name, mode="ATLEAST_ONCE", **{"kafka.value.format": "json"})
    s.init_state(KeyValueState())
    try:
        run(s, 7)
        wait_until(lambda: s.next_tuple() or s._collector.errors, timeout=10, what="the bad record")
        assert sorted(v[1]["i"] for v, _ in s._collector.tuples) == [0, 1, 2, 3, 4, 6, 7]
        [(error, tup_id)] = s._collector.errors
        assert error[:3] == [topic_name, 1, 1] and error[3].startswith("value: UnicodeDecodeError") and tup_id is None
        assert s.bad_records.get_value_and_reset() == 1
        for _, tup_id in s._collector.tuples:
            s.ack(tup_id)
        s.pre_save(1)
        assert s.state.get((topic_name, 1)) == 2  # the bad record does not hold the offset back
    finally:
        s.close()


def test_backpressure_pauses_every_partition_and_its_end_resumes_them(kafka_bootstrap, topic_name):
    produce(kafka_bootstrap, topic_name, 40)
    s = spout(kafka_bootstrap, topic_name)
    s.init_state(KeyValueState())
    try:
        s.on_backpressure(True)
        time.sleep(0.5)  # fetches have had time to arrive, were the partitions not paused
        quiet(s)
        assert s._collector.tuples == []
        s.on_backpressure(False)
        run(s, 40)
    finally:
        s.close()


def test_kafka_start_latest_and_committed(kafka_bootstrap, topic_name):
    produce(kafka_bootstrap, topic_name, 8)
    latest = spout(kafka_bootstrap, topic_name, group="c", **{"kafka.start": "latest"})
    latest.init_state(KeyValueState())
    try:
        quiet(latest)
        assert latest._collector.tuples == []
        produce(kafka_bootstrap, topic_name, 4, start=8)
        run(latest, 4)
        assert sorted(latest._collector.offsets()) == [(p, 2) for p in range(PARTITIONS)]
        latest.pre_save(1)
        latest.post_save(1)
        wait_until(lambda: len(committed(kafka_bootstrap, topic_name, "c")) == PARTITIONS, timeout=10,
                   what="the group's offsets")
    finally:
        latest.close()
    resumed = spout(kafka_bootstrap, topic_name, group="c", **{"kafka.start": "committed"})
    resumed.init_state(KeyValueState())
    fresh = spout(kafka_bootstrap, topic_name, group="other", **{"kafka.start": "committed"})
    fresh.init_state(KeyValueState())  # no committed offsets: from the earliest
    try:
        produce(kafka_bootstrap, topic_name, 4, start=12)
        run(resumed, 4)
        run(fresh, 16)
        assert sorted(resumed._collector.offsets()) == [(p, 3) for p in range(PARTITIONS)]
    finally:
        resumed.close()
        fresh.close()


def test_metrics_per_partition(kafka_bootstrap, topic_name):
    produce(kafka_bootstrap, topic_name, 40)
    s = spout(kafka_bootstrap, topic_name, **{"kafka.batch.size": 8})
    s.init_state(KeyValueState())
    try:
        run(s, 8)
        from squall.metrics import SOURCE_PARTITIONS

        partitions = s.context.metrics[SOURCE_PARTITIONS][0].get_value_and_reset()
        emitted = {f"{topic_name}-{p}": sum(1 for q, _ in s._collector.offsets() if q == p) for p in range(PARTITIONS)}
        read = {k for k, n in emitted.items() if n}
        assert read <= set(partitions) <= set(emitted)  # read from, or with a known high watermark
        assert all(partitions[k]["records_per_sec"] > 0 and partitions[k]["bytes_per_sec"] > 0 for k in read)
        lag = {k: p["lag"] for k, p in partitions.items() if p["lag"] is not None}
        assert lag and all(lag[k] == 10 - emitted[k] for k in lag)  # high watermark 10 in each partition
    finally:
        s.close()


def test_partitions_that_appear_later_are_found_and_read_from_their_earliest_offset(kafka_bootstrap, topic_name):
    later = f"{topic_name}-later"
    produce(kafka_bootstrap, topic_name, 8)
    s = spout(kafka_bootstrap, f"{topic_name},{later}", **{"kafka.discover.interval.secs": 0.05,
                                                           "kafka.start": "latest"})
    s.init_state(KeyValueState())  # the second topic does not exist yet
    try:
        produce(kafka_bootstrap, topic_name, 4, start=8)
        run(s, 4)
        produce(kafka_bootstrap, later, 12)  # created now, by its first records
        run(s, 16, "the new topic's records")
        quiet(s)
        got = sorted((v[2], v[3], v[4]) for v, _ in s._collector.tuples)
        assert got == sorted([(topic_name, p, 2) for p in range(PARTITIONS)] +
                             [(later, p, o) for p in range(PARTITIONS) for o in range(3)])
        s.pre_save(1)
        assert len(s.state) == 2 * PARTITIONS
    finally:
        s.close()


@pytest.mark.skipif(bool(os.environ.get("SQUALL_TEST_KAFKA")), reason="stops a broker: the mock cluster's own")
def test_a_broker_that_goes_away_is_counted_reported_and_never_raises(topic_name):
    from squall.testing.kafka import MockKafkaCluster

    with MockKafkaCluster(brokers=1) as bootstrap:
        produce(bootstrap, topic_name, 8)
        s = spout(bootstrap, topic_name)
        s.init_state(KeyValueState())
        run(s, 8)
    try:  # the cluster is gone
        wait_until(lambda: s.next_tuple() or s.client_errors.values, timeout=30, interval=0.01,
                   what="the client's errors counted")
        assert s._collector.problems and all(where == "Kafka client" for where, _ in s._collector.problems)
        assert any("Kafka client error" in error for _, error in s._collector.problems)
        s.next_discover = 0  # a look for partitions fails too, and is retried later
        s.next_tuple()
        s.pre_save(1)
        assert len(s.state) == PARTITIONS and s.next_discover > time.monotonic()
    finally:
        s.close()


def test_a_spout_started_without_a_broker_assigns_its_partitions_once_one_answers(topic_name):
    s = spout("127.0.0.1:1", topic_name)
    try:
        s.init_state(KeyValueState({(topic_name, 0): 5}))  # no broker: nothing assigned, nothing raised
        assert s.positions == {} and s.next_discover > time.monotonic()
        s.pre_save(1)
        assert dict(s.state.items()) == {(topic_name, 0): 5}  # the restored positions are kept
        assert s.client_errors.values
    finally:
        s.close()


def test_aborted_transactions_are_not_read_and_their_offsets_do_not_hold_the_commit_back(kafka_bootstrap, topic_name):
    """read_committed (librdkafka's default): an aborted transaction's records are skipped, and the
    transaction markers leave gaps in the offsets that the at-least-once commit passes over."""
    p = ck.Producer({"bootstrap.servers": kafka_bootstrap, "transactional.id": f"tx-{topic_name}"})
    p.init_transactions(10)
    for n, commit in ((3, True), (2, False), (3, True)):
        p.begin_transaction()
        for i in range(n):
            p.produce(topic_name, key="k", value=f"{'kept' if commit else 'aborted'}", partition=0)
        (p.commit_transaction if commit else p.abort_transaction)(10)
    s = spout(kafka_bootstrap, topic_name, mode="ATLEAST_ONCE")
    s.init_state(KeyValueState())
    try:
        run(s, 6)
        quiet(s)
        values = [v for v, _ in s._collector.tuples]
        assert [v[1] for v in values] == ["kept"] * 6
        offsets = [v[4] for v in values]
        # 3 is the first transaction's commit marker; a real broker also gives the aborted records and their
        # abort marker offsets (4-6), the mock cluster drops them
        assert offsets[:3] == [0, 1, 2] and offsets[3] >= 4
        for _, tup_id in s._collector.tuples:
            s.ack(tup_id)
        s.pre_save(1)
        assert s.state.get((topic_name, 0)) == offsets[-1] + 1
    finally:
        s.close()
