"""The KafkaSpout's pure rules: partition assignment, the at-least-once offset manager, its config checks."""
import pytest

from squall import Grouping, TopologyBuilder, Window, WindowedBolt
from squall.connectors.kafka.assign import assign_partitions, task_index
from squall.connectors.kafka.offsets import Backoff, PartitionOffsets
from squall.connectors.kafka.records import decoder, key_decoder
from squall.connectors.kafka.spout import KafkaSpout, Settings

PARTS = [("b", 1), ("a", 2), ("a", 0), ("b", 0), ("a", 1)]


# assignment -------------------------------------------------------------------------------
def test_each_topics_partitions_go_round_robin_from_a_task_its_name_chooses():
    assert assign_partitions(PARTS, 0, 2) == [("a", 1), ("b", 1)]  # h("a") % 2 == h("b") % 2 == 1
    assert assign_partitions(PARTS, 1, 2) == [("a", 0), ("a", 2), ("b", 0)]
    many = [(t, p) for t in ("orders", "clicks", "users") for p in range(10)]
    for topic in ("orders", "clicks", "users"):
        counts = [sum(1 for t, _ in assign_partitions(many, i, 3) if t == topic) for i in range(3)]
        assert sorted(counts) == [3, 3, 4]


def test_partitions_and_topics_added_later_never_move_a_partition_already_read():
    before = [("m", p) for p in range(4)] + [("z", p) for p in range(3)]
    after = before + [("m", 4), ("m", 5), ("a", 0), ("a", 1)]
    for parallelism in (2, 3, 4):
        for i in range(parallelism):
            old = set(assign_partitions(before, i, parallelism))
            new = set(assign_partitions(after, i, parallelism))
            assert old <= new and not (new - old) & set(before)


@pytest.mark.parametrize("parallelism", [1, 2, 3, 5, 7])
def test_every_partition_is_read_by_exactly_one_task(parallelism):
    got = [tp for i in range(parallelism) for tp in assign_partitions(reversed(PARTS), i, parallelism)]
    assert sorted(got) == sorted(PARTS)


def test_task_index_is_the_rank_among_the_components_tasks():
    assert task_index(12, [15, 12, 9]) == (1, 3)
    with pytest.raises(ValueError, match="task 4 is not one of"):
        task_index(4, [1, 2])
    with pytest.raises(ValueError, match="task index 2 is not one of 2 tasks"):
        assign_partitions(PARTS, 2, 2)


# offset manager -------------------------------------------------------------------------------
def test_the_committable_offset_moves_only_past_contiguously_acked_records():
    p = PartitionOffsets(10)
    assert p.committable == 10
    for o in (10, 11, 12, 13):
        p.emitted(o, [o])
    p.ack(11)
    p.ack(13)
    assert p.committable == 10  # 10 is open
    p.ack(10)
    assert p.committable == 12
    p.ack(12)
    assert p.committable == 14 == p.position
    assert len(p) == 0


def test_offsets_the_partition_skips_do_not_hold_the_commit_back():
    p = PartitionOffsets(0)
    p.emitted(0, "a")
    p.emitted(5, "b")  # 1..4 compacted away (or transaction markers)
    p.skipped(6)  # an undecodable record, sent to the error stream
    p.ack(0)
    assert p.committable == 5
    p.ack(5)
    assert p.committable == 7


def test_a_failed_record_is_emitted_again_after_an_exponential_backoff_and_stays_open():
    p = PartitionOffsets(0, Backoff(first=1.0, factor=2.0, longest=3.0))
    p.emitted(0, ["zero"])
    p.emitted(1, ["one"])
    assert p.fail(0, now=100.0)
    assert not p.fail(0, now=100.1)  # already waiting for its retry
    p.ack(1)
    assert p.committable == 0
    assert p.due(100.9) == []
    assert p.due(101.0) == [(0, ["zero"])]
    p.fail(0, now=102.0)
    assert p.due(103.9) == [] and p.due(104.0) == [(0, ["zero"])]  # 2 s the second time
    p.fail(0, now=110.0)
    assert p.due(112.9) == [] and p.due(113.0) == [(0, ["zero"])]  # at most 3 s
    p.ack(0)
    assert p.committable == 2 and len(p) == 0


def test_acks_and_fails_of_offsets_not_open_are_ignored():
    """After a rollback the spout starts a fresh manager; the old epoch's acks and fails land on nothing."""
    p = PartitionOffsets(50)
    assert not p.ack(10)
    assert not p.fail(10, now=0.0)
    assert p.due(1e9) == []
    p.emitted(50, "x")
    p.ack(50)
    assert not p.ack(50)
    assert p.committable == 51


def test_an_acked_record_waiting_for_its_retry_is_not_emitted_again():
    p = PartitionOffsets(0, Backoff(first=1.0))
    p.emitted(0, "x")
    p.fail(0, now=0.0)
    p.ack(0)  # a late ack of the first emit
    assert p.due(10.0) == []
    assert p.committable == 1


# config -----------------------------------------------------------------------------------------
BASE = {"kafka.bootstrap.servers": "localhost:9092", "kafka.topics": "a, b"}


def test_settings_read_the_keys_with_their_defaults():
    s = Settings.from_config(BASE)
    assert s.topics == ("a", "b") and s.start == "committed" and s.value_format == "utf-8"
    assert s.discover_secs == 30 and s.commit_secs == 5 and s.max_uncommitted == 5000 and s.batch_size == 500
    s = Settings.from_config({**BASE, "kafka.start": "latest", "kafka.value.format": "json",
                              "kafka.retry.initial.secs": 2, "kafka.retry.max.secs": 1})
    assert s.start == "latest" and s.value_format == "json" and s.retry == Backoff(2.0, 2.0, 2.0)


@pytest.mark.parametrize("change, message", [
    ({"kafka.topics": None}, "kafka.topics is not set"),
    ({"kafka.topics": " "}, "kafka.topics is not set"),
    ({"kafka.topics": "a,,b"}, "kafka.topics is 'a,,b': an empty topic name"),
    ({"kafka.bootstrap.servers": ""}, "kafka.bootstrap.servers is not set"),
    ({"kafka.start": "newest"}, "kafka.start is 'newest': expected one of earliest, latest, committed"),
    ({"kafka.value.format": "avro"}, "kafka.value.format is 'avro': expected one of utf-8, bytes, json"),
    ({"kafka.batch.size": 0}, "kafka.batch.size is 0: expected a number above 0"),
    ({"kafka.commit.interval.secs": "soon"}, "kafka.commit.interval.secs is 'soon': expected a number"),
    ({"kafka.topic.s": "x"}, "unknown Kafka connector key 'kafka.topic.s'; did you mean"),
])
def test_check_config_names_the_key_at_fault(change, message):
    config = {k: v for k, v in {**BASE, **change}.items() if v is not None}
    with pytest.raises(ValueError, match=message):
        KafkaSpout.check_config(config)


def test_librdkafka_properties_pass_through():
    KafkaSpout.check_config({**BASE, "kafka.consumer.fetch.max.bytes": 1000})


def test_values_decode_by_format_and_keys_stay_bytes_only_with_bytes():
    assert decoder("json")(b'{"a": 1}') == {"a": 1}
    assert decoder("utf-8")("é".encode()) == "é"
    assert decoder("bytes")(b"\xff") == b"\xff"
    assert key_decoder("json")(b"k") == "k" and key_decoder("bytes")(b"k") == b"k"
    with pytest.raises(ValueError):
        decoder("utf-8")(b"\xff")
    with pytest.raises(ValueError):
        decoder("json")(b"{nope")


class PerMinute(WindowedBolt):
    window = Window.tumbling(duration=60)
    watermark_fields = ("topic", "partition")

    def timestamp(self, tup):
        return tup["timestamp"] / 1000

    def process_window(self, window):
        pass


def test_a_windowed_bolt_after_the_spout_keeps_a_watermark_per_partition():
    b = TopologyBuilder("t")
    s = b.add_spout("kafka", KafkaSpout, config=BASE)
    b.add_bolt("minutes", PerMinute, inputs={s: Grouping.SHUFFLE})
    b.build()
