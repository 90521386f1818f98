"""KafkaBolt driven as a task without sockets (runtime/instance's state machine; tests/runtime/test_checkpointing.py
does the same for its bolts), writing to the test broker. Effectively once: what a checkpoint's records become
after commits, deaths before and after a commit, and a rescale."""
import json
import time

import msgpack
import pytest

from squall import TopologyBuilder
from squall.errors import TopologyError
from squall.idl import schema
from squall.runtime.instance import make_instance
from squall.runtime.acking import TASK_SHIFT
from squall.runtime.protocol import MARKER, control_frame, data_frame
from squall.state.storage import LocalStorage
from squall.stateful import StatefulSpout

ck = pytest.importorskip("confluent_kafka")
from squall.connectors.kafka import KafkaBolt  # noqa: E402

Step = schema.CheckpointStep


class Numbers(StatefulSpout):
    outputs = ["n", "name"]


def topology(bootstrap, topic, sink_par=1, mode="EFFECTIVELY_ONCE", **extra):
    builder = TopologyBuilder("kbolt")
    numbers = builder.add_spout("numbers", Numbers)
    builder.add_bolt("sink", KafkaBolt, par=sink_par, inputs=[numbers],
                     config={"kafka.bootstrap.servers": bootstrap, "kafka.topic": topic, **extra})
    builder.set_config({"topology.reliability.mode": mode, "squall.state.key.groups": 16})
    return builder.build().plan


def pplan(sink_tasks):
    """numbers is task 1, the sink's tasks are 2.."""
    tasks = [("numbers", 1, 0)] + [("sink", t, i) for i, t in enumerate(sink_tasks)]
    return schema.PhysicalPlan(
        topology_name="kbolt", packing_plan_id="p", status=schema.TopologyStatus.RUNNING,
        tmaster=schema.TMasterLocation(topology_name="kbolt", host="h", control_port=1, pid=1, run_id="r"),
        stmgrs=[schema.StMgrLocation(container=1, host="h", data_port=2, pid=1)],
        instances=[schema.InstanceLocation(id=schema.InstanceId(c, t, i), container=1, pid=t) for c, t, i in tasks])


def step(s, cid, epoch):
    return control_frame(checkpoint=schema.CheckpointMessage(step=s, checkpoint_id=cid, epoch=epoch))


def numbers(inst, ns, epoch):
    inst.on_frame(data_frame(inst.task_id, msgpack.packb([1, [["default", [[n, f"n{n}"] for n in ns]]], epoch]),
                             len(ns)), 0.0)


def checkpoint(inst, cid, epoch):
    """The spout's marker: the sink saves checkpoint ``cid``."""
    inst.on_frame(data_frame(inst.task_id, msgpack.packb([1, cid, epoch]), 0, MARKER), 0.0)


def task(plan, storage, task_id, sink_tasks, restore=0, epoch=1):
    """A sink task's process, started and restored to checkpoint ``restore`` in ``epoch``."""
    inst = make_instance(plan, "sink", task_id, 1)
    inst.checkpoint.storage = storage
    inst.on_frame(control_frame(physical_plan=pplan(sink_tasks)), 0.0)
    inst.on_frame(step(Step.RESTORE, restore, epoch), 0.0)
    return inst


def read_all(bootstrap, topic):
    """Every record a read_committed consumer sees in ``topic``, as the ``n`` of its JSON value."""
    consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": "reader", "enable.auto.commit": False,
                            "isolation.level": "read_committed"})
    try:
        partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        ends = {p: consumer.get_watermark_offsets(ck.TopicPartition(topic, p), timeout=10)[1] for p in partitions}
        consumer.assign([ck.TopicPartition(topic, p, ck.OFFSET_BEGINNING) for p in partitions])
        got, at = [], {p: 0 for p in partitions}
        deadline = time.monotonic() + 30
        while any(at[p] < ends[p] for p in partitions):
            assert time.monotonic() < deadline, f"not every record read within 30 s; read so far {at}, ends {ends}"
            for m in consumer.consume(1000, timeout=0.1):  # returns at 1000 records or the timeout
                if m.error() is None:
                    got.append(json.loads(m.value())["n"])
                    at[m.partition()] = m.offset() + 1
            for tp in consumer.position([ck.TopicPartition(topic, p) for p in partitions]):
                at[tp.partition] = max(at[tp.partition], tp.offset)
        return sorted(got)
    finally:
        consumer.close()


@pytest.fixture
def storage(tmp_path):
    return LocalStorage(str(tmp_path))


def test_records_are_written_only_when_their_checkpoint_is_complete(kafka_bootstrap, topic_name, storage):
    plan = topology(kafka_bootstrap, topic_name)
    sink = task(plan, storage, 2, [2])
    numbers(sink, range(10), 1)
    checkpoint(sink, 1, 1)
    numbers(sink, range(10, 15), 1)  # after the marker: checkpoint 2's
    assert read_all(kafka_bootstrap, topic_name) == []
    sink.on_frame(step(Step.DONE, 1, 1), 0.0)
    assert read_all(kafka_bootstrap, topic_name) == list(range(10))
    assert sink.component.records.get_value_and_reset() == 10
    since = sink.component.entry["since"]  # the offset of the owner's last marker: a recovery reads from it
    checkpoint(sink, 2, 1)
    sink.on_frame(step(Step.DONE, 2, 1), 0.0)
    assert read_all(kafka_bootstrap, topic_name) == list(range(15))
    assert sink.component.entry["since"] > since >= 0


def test_a_rollback_in_the_same_process_drops_what_it_held_and_commits_nothing_twice(kafka_bootstrap, topic_name,
                                                                                       storage):
    sink = task(topology(kafka_bootstrap, topic_name), storage, 2, [2])
    numbers(sink, range(10), 1)
    checkpoint(sink, 1, 1)
    sink.on_frame(step(Step.DONE, 1, 1), 0.0)
    numbers(sink, range(10, 20), 1)
    checkpoint(sink, 2, 1)  # another task died: checkpoint 2 never completes
    numbers(sink, range(20, 25), 1)
    sink.on_frame(step(Step.RESTORE, 1, 2), 0.0)  # every task rolls back to 1
    numbers(sink, range(10, 25), 2)  # the replay
    checkpoint(sink, 3, 2)
    sink.on_frame(step(Step.DONE, 3, 2), 0.0)
    assert read_all(kafka_bootstrap, topic_name) == list(range(25))


def test_a_task_dead_before_its_commit_has_its_records_committed_once_by_the_restore(kafka_bootstrap, topic_name,
                                                                                     storage):
    plan = topology(kafka_bootstrap, topic_name)
    sink = task(plan, storage, 2, [2])
    numbers(sink, range(10), 1)
    checkpoint(sink, 1, 1)  # saved; the checkpoint completes, but the task dies before post_save
    numbers(sink, range(10, 20), 1)  # after the checkpoint: lost with the task, the replay redoes them
    del sink
    again = task(plan, storage, 2, [2], restore=1, epoch=2)
    assert read_all(kafka_bootstrap, topic_name) == list(range(10))
    numbers(again, range(10, 20), 2)
    checkpoint(again, 2, 2)
    again.on_frame(step(Step.DONE, 2, 2), 0.0)
    assert read_all(kafka_bootstrap, topic_name) == list(range(20))
    task(plan, storage, 2, [2], restore=1, epoch=3)  # restored from 1 again: its records are committed
    task(plan, storage, 2, [2], restore=2, epoch=4)
    assert read_all(kafka_bootstrap, topic_name) == list(range(20))


def test_a_task_dead_after_its_commit_is_not_written_twice_by_the_restore(kafka_bootstrap, topic_name, storage):
    plan = topology(kafka_bootstrap, topic_name)
    sink = task(plan, storage, 2, [2])
    numbers(sink, range(10), 1)
    checkpoint(sink, 1, 1)
    sink.on_frame(step(Step.DONE, 1, 1), 0.0)  # committed; checkpoint 1's state still holds the records
    del sink
    task(plan, storage, 2, [2], restore=1, epoch=2)
    assert read_all(kafka_bootstrap, topic_name) == list(range(10))


def test_a_rescale_commits_every_dead_tasks_pending_records_once(kafka_bootstrap, topic_name, storage):
    before = topology(kafka_bootstrap, topic_name, sink_par=2)
    a, b = task(before, storage, 2, [2, 3]), task(before, storage, 3, [2, 3])
    numbers(a, range(0, 10), 1)
    numbers(b, range(10, 20), 1)
    for sink in (a, b):
        checkpoint(sink, 1, 1)
    a.on_frame(step(Step.DONE, 1, 1), 0.0)  # a committed checkpoint 1, b died first
    numbers(a, range(20, 30), 1)
    checkpoint(a, 2, 1)  # checkpoint 2 never completes
    del a, b
    after = topology(kafka_bootstrap, topic_name, sink_par=3)
    tasks = [task(after, storage, t, [2, 3, 4], restore=1, epoch=2) for t in (2, 3, 4)]
    assert read_all(kafka_bootstrap, topic_name) == list(range(20))
    for n, sink in enumerate(tasks):
        numbers(sink, range(100 + 10 * n, 110 + 10 * n), 2)
        checkpoint(sink, 3, 2)
    for sink in tasks:
        sink.on_frame(step(Step.DONE, 3, 2), 0.0)
    assert read_all(kafka_bootstrap, topic_name) == list(range(20)) + list(range(100, 130))


def tracked(inst, ns):
    """At least once: tuples of one span of a tree of spout task 1."""
    root = (1 << TASK_SHIFT) | 99
    inst.on_frame(data_frame(inst.task_id, msgpack.packb([1, [["default", [[n, "x"] for n in ns], [0, root, 7]]], 1]),
                             len(ns)), 0.0)


def test_at_most_once_records_are_produced_as_they_come(kafka_bootstrap, topic_name, storage):
    sink = task(topology(kafka_bootstrap, topic_name, mode="ATMOST_ONCE"), storage, 2, [2])
    numbers(sink, range(5), 1)
    sink.component.producer.flush(10)
    assert read_all(kafka_bootstrap, topic_name) == list(range(5))


def test_at_least_once_a_batch_is_acked_once_the_broker_has_every_record(kafka_bootstrap, topic_name, storage):
    sink = task(topology(kafka_bootstrap, topic_name, mode="ATLEAST_ONCE"), storage, 2, [2])
    tracked(sink, range(5))
    assert read_all(kafka_bootstrap, topic_name) == list(range(5))  # confirmed before the batch returned
    assert sink.component.records.get_value_and_reset() == 5  # the task's kafka_records metric
    row = sink.metrics_row(0.0, 1.0)  # the task's figures, as its metrics report them
    assert (row.ack_count, row.fail_count) == (5, 0)


def test_at_least_once_records_the_broker_does_not_confirm_fail_their_tuples(storage):
    plan = topology("127.0.0.1:1", "nowhere", mode="ATLEAST_ONCE", **{
        "topology.message.timeout.secs": 1, "topology.state.checkpoint.interval.secs": 0.5})
    sink = task(plan, storage, 2, [2])
    tracked(sink, range(5))
    assert sink.component.refused.get_value_and_reset() == 5
    row = sink.metrics_row(0.0, 1.0)
    assert (row.ack_count, row.fail_count) == (0, 5)
    assert sink.acks_out[1][1] == [(1 << TASK_SHIFT) | 99]  # the tree fails at its spout, which replays it


# ----------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("config, message", [
    ({"kafka.topic": "t"}, r"components.sink: kafka.bootstrap.servers is not set"),
    ({"kafka.bootstrap.servers": "h:1"}, r"components.sink: kafka.topic is not set"),
    ({"kafka.bootstrap.servers": "h:1", "kafka.topic": "t", "kafka.topik": "u"}, r"'kafka.topik'; did you mean 'kafka.topic'"),
    ({"kafka.bootstrap.servers": "h:1", "kafka.topic": "t", "kafka.producer.transactional.id": "x"},
     r"kafka.producer.transactional.id is set: at EFFECTIVELY_ONCE the Kafka bolt sets it itself"),
    ({"kafka.bootstrap.servers": "h:1", "kafka.topic": "t", "kafka.producer.enable.idempotence": False},
     r"kafka.producer.enable.idempotence is false: at EFFECTIVELY_ONCE"),
    ({"kafka.bootstrap.servers": "h:1", "kafka.topic": "t", "kafka.producer.acks": "1"},
     r"kafka.producer.acks is 1: at EFFECTIVELY_ONCE transactions need acks=all"),
    ({"kafka.bootstrap.servers": "h:1", "kafka.topic": "t", "kafka.commits.topic": "t"},
     r"kafka.commits.topic is the output topic 't'"),
])
def test_bad_config_is_refused_naming_the_key(config, message):
    from squall.preflight import check_components

    builder = TopologyBuilder("bad")
    numbers = builder.add_spout("numbers", Numbers)
    builder.add_bolt("sink", KafkaBolt, inputs=[numbers], config=config)
    builder.set_config({"topology.reliability.mode": "EFFECTIVELY_ONCE"})
    with pytest.raises(TopologyError, match=message):
        check_components(builder.build().plan)  # every command that loads the topology file


def test_acks_0_is_refused_at_least_once():
    with pytest.raises(ValueError, match="kafka.producer.acks is 0: at ATLEAST_ONCE"):
        KafkaBolt.check_config({"kafka.bootstrap.servers": "h:1", "kafka.topic": "t", "kafka.producer.acks": 0,
                                "topology.reliability.mode": "ATLEAST_ONCE"})


def test_preflight_names_a_missing_topic_and_at_effectively_once_the_commits_topic(kafka_bootstrap, topic_name):
    config = {"kafka.bootstrap.servers": kafka_bootstrap, "kafka.topic": topic_name}
    with pytest.raises(ValueError, match=f"Kafka topic '{topic_name}' does not exist"):
        KafkaBolt.preflight(config)
    producer = ck.Producer({"bootstrap.servers": kafka_bootstrap})
    producer.list_topics(topic_name, timeout=10)  # creates it (the mock cluster: on a metadata request)
    KafkaBolt.preflight(config)
    with pytest.raises(ValueError, match=f"Kafka topic '{topic_name}.squall-commits' does not exist"):
        KafkaBolt.preflight({**config, "topology.reliability.mode": "EFFECTIVELY_ONCE"})
