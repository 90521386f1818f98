"""A task's part in checkpoints as a state machine: markers, alignment, saving, rollback. No sockets."""

import msgpack

from squall import Grouping, TopologyBuilder
from squall.idl import schema
from squall.runtime.instance import make_instance
from squall.runtime.user_errors import CHECKPOINT_STORAGE
from squall.runtime.protocol import CONTROL, MARKER, FrameReader, control_frame, data_frame, decode_control
from squall.state.storage import LocalStorage, saved_tasks, task_file
from squall.stateful import KeyValueState, decode_state, encode_state, group_owner, key_group

from stateful_components import Count, PartitionSource, Sink, Source

Step = schema.CheckpointStep
GROUPS = 16


def plan_of(count_par=1, source_cls=Source):
    builder = TopologyBuilder("ckpt")
    source = builder.add_spout("source", source_cls, par=2)
    count = builder.add_bolt("count", Count, par=count_par, inputs={source: Grouping.fields("word")})
    builder.add_bolt("sink", Sink, inputs={count: Grouping.SHUFFLE})
    builder.set_config({"topology.reliability.mode": "EFFECTIVELY_ONCE", "squall.state.key.groups": GROUPS})
    return builder.build().plan


# tasks: components in name order from 1: count 1.., then sink, then source
def pplan(count_tasks=(1,), sink=2, sources=(3, 4)):
    tasks = [("count", t) for t in count_tasks] + [("sink", sink)] + [("source", t) for t in sources]
    return schema.PhysicalPlan(
        topology_name="ckpt", packing_plan_id="p", status=schema.TopologyStatus.RUNNING,
        tmaster=schema.TMasterLocation(topology_name="ckpt", host="h", control_port=1, pid=1, run_id="r"),
        stmgrs=[schema.StMgrLocation(container=1, host="h", data_port=2, pid=1)],
        instances=[schema.InstanceLocation(id=schema.InstanceId(c, t, 0), container=1, pid=t) for c, t in tasks])


def step(s, cid, epoch):
    return control_frame(checkpoint=schema.CheckpointMessage(step=s, checkpoint_id=cid, epoch=epoch))


def words(src, *ws, epoch=1, dest=1):
    return data_frame(dest, msgpack.packb([src, [["default", [[w] for w in ws]]], epoch]), len(ws))


def marker(src, cid, epoch=1, dest=1):
    return data_frame(dest, msgpack.packb([src, cid, epoch]), 0, MARKER)


def sent(inst):
    frames = FrameReader().feed(bytes(inst.out))
    inst.out.clear()
    return frames


def steps(frames):
    return [(m.step, m.checkpoint_id, m.task_id) for m in
            (decode_control(f).checkpoint for f in frames if f[4] == CONTROL) if m is not None]


def started(tmp_path, task=1, pplan_=None, count_par=1):
    inst = make_instance(plan_of(count_par), "count", task, 1)
    inst.checkpoint.storage = LocalStorage(str(tmp_path))
    inst.on_frame(control_frame(physical_plan=pplan_ or pplan()), 0.0)
    inst.on_frame(step(Step.RESTORE, 0, 1), 0.0)
    assert steps(sent(inst)) == [(Step.RESTORED, 0, task)]
    return inst


def test_a_bolt_holds_an_input_that_sent_its_marker_until_every_input_has(tmp_path):
    inst = started(tmp_path)
    inst.on_frame(words(3, "a", "b"), 0.0)
    inst.on_frame(marker(3, 1), 0.0)
    inst.on_frame(words(3, "a"), 0.0)  # after source 3's marker: held
    inst.on_frame(words(4, "b"), 0.0)  # source 4 has not sent it: processed
    assert dict(inst.component.state.items()) == {"a": 1, "b": 2} and steps(sent(inst)) == []
    inst.on_frame(marker(4, 1), 0.0)
    frames = sent(inst)
    # saved as it was when the last marker came, then the markers, then the held tuple processed
    assert steps(frames) == [(Step.SAVED, 1, 1)]
    assert [msgpack.unpackb(f[13:]) for f in frames if f[4] == MARKER] == [[1, 1, 1]]  # to the sink (task 2)
    saved = LocalStorage(str(tmp_path)).read(task_file("ckpt", 1, "count", 0, 1))
    assert {k: v for _, k, v in decode_state(saved)} == {"a": 1, "b": 2}
    assert dict(inst.component.state.items()) == {"a": 2, "b": 2}
    # the tuples before the markers were reported consumed with them; the held one once processed
    reported = [decode_control(f).consumed for f in frames if f[4] == CONTROL and decode_control(f).consumed]
    assert reported == [3] and inst.consumed == 1


def test_tuples_and_markers_of_another_epoch_are_dropped_and_count_as_consumed(tmp_path):
    inst = started(tmp_path)
    inst.on_frame(words(3, "a", "b", epoch=0), 0.0)
    inst.on_frame(marker(3, 1, epoch=0), 0.0)
    inst.on_frame(marker(4, 1, epoch=0), 0.0)
    assert len(inst.component.state) == 0 and steps(sent(inst)) == [] and inst.consumed == 2


def test_a_newer_marker_abandons_the_alignment_and_what_was_held_is_processed(tmp_path):
    inst = started(tmp_path)
    inst.on_frame(marker(3, 1), 0.0)
    inst.on_frame(words(3, "x"), 0.0)
    inst.on_frame(marker(4, 2), 0.0)  # source 4 skipped checkpoint 1
    assert dict(inst.component.state.items()) == {"x": 1}  # held, then processed when 1 was abandoned
    inst.on_frame(marker(3, 1), 0.0)  # a late marker of the abandoned checkpoint: ignored
    inst.on_frame(marker(3, 2), 0.0)
    assert steps(sent(inst)) == [(Step.SAVED, 2, 1)]


def test_an_alignment_that_holds_too_much_is_abandoned(tmp_path):
    inst = started(tmp_path)
    inst.checkpoint.buffer_bytes = 100
    inst.on_frame(marker(3, 1), 0.0)
    inst.on_frame(words(3, *["w"] * 50), 0.0)
    assert inst.component.state.get("w") == 50 and inst.checkpoint.aligning is None
    inst.on_frame(marker(4, 1), 0.0)
    assert steps(sent(inst)) == []  # this task never saves checkpoint 1: it will not complete


def test_restore_loads_the_checkpoint_and_done_calls_post_save(tmp_path):
    inst = started(tmp_path)
    calls = []
    inst.component.post_save = calls.append
    inst.on_frame(words(3, "a", "a"), 0.0)
    inst.on_frame(marker(3, 5), 0.0)
    inst.on_frame(marker(4, 5), 0.0)
    inst.on_frame(words(4, "a"), 0.0)
    inst.on_frame(step(Step.DONE, 5, 1), 0.0)
    assert calls == [5] and inst.component.state.get("a") == 3
    inst.on_frame(words(4, "after"), 0.0)
    sent(inst)
    inst.on_frame(step(Step.RESTORE, 5, 2), 0.0)
    assert dict(inst.component.state.items()) == {"a": 2} and inst.epoch == 2
    assert steps(sent(inst)) == [(Step.RESTORED, 5, 1)]
    inst.on_frame(words(4, "a"), 0.0)  # epoch 1: dropped
    assert inst.component.state.get("a") == 2


def test_a_rescaled_task_restores_exactly_the_keys_whose_group_it_now_owns(tmp_path):
    storage = LocalStorage(str(tmp_path))
    keys = [f"w{i}" for i in range(200)]
    # checkpoint 3 was saved by 2 tasks: each key in the task that owned its group at parallelism 2
    for index in range(2):
        mine = {k: i for i, k in enumerate(keys) if group_owner(key_group(k, GROUPS), 2, GROUPS) == index}
        storage.write(task_file("ckpt", 3, "count", index, 2), encode_state(KeyValueState(mine), GROUPS))
    assert len(saved_tasks(storage, "ckpt", 3, "count")) == 2
    restored = {}
    for index, task in enumerate((1, 2, 3)):  # now 3 count tasks: 1, 2, 3 (sink 4, sources 5, 6)
        inst = make_instance(plan_of(3), "count", task, 1)
        inst.checkpoint.storage = storage
        inst.on_frame(control_frame(physical_plan=pplan((1, 2, 3), 4, (5, 6))), 0.0)
        inst.on_frame(step(Step.RESTORE, 3, 1), 0.0)
        state = dict(inst.component.state.items())
        assert all(group_owner(key_group(k, GROUPS), 3, GROUPS) == index for k in state)
        assert not set(state) & set(restored)
        restored.update(state)
    assert restored == {k: i for i, k in enumerate(keys)}


def test_a_rescaled_rescalable_spout_gets_every_tasks_keys(tmp_path):
    storage = LocalStorage(str(tmp_path))
    # checkpoint 4 was saved by 3 source tasks, each with the offsets of the partitions it read
    for index in range(3):
        mine = {("t", p): 100 + p for p in range(8) if p % 3 == index}
        storage.write(task_file("ckpt", 4, "source", index, 3), encode_state(KeyValueState(mine), GROUPS))
    for task in (3, 4):  # now 2 source tasks
        spout = make_instance(plan_of(source_cls=PartitionSource), "source", task, 1)
        spout.checkpoint.storage = storage
        spout.on_frame(control_frame(physical_plan=pplan()), 0.0)
        spout.on_frame(step(Step.RESTORE, 4, 1), 0.0)
        assert dict(spout.component.state.items()) == {("t", p): 100 + p for p in range(8)}


def test_a_spout_waits_for_resume_then_saves_and_sends_markers_on_start(tmp_path):
    spout = make_instance(plan_of(), "source", 3, 1)
    spout.checkpoint.storage = LocalStorage(str(tmp_path))
    spout.on_frame(control_frame(physical_plan=pplan()), 0.0)
    assert not spout.may_emit  # restoring until the topology master says every task has
    spout.on_frame(step(Step.RESTORE, 0, 1), 0.0)
    assert not spout.may_emit
    spout.on_frame(step(Step.RESUME, 0, 1), 0.0)
    assert spout.may_emit
    spout.component.state.put("next", 42)
    sent(spout)
    spout.on_frame(step(Step.START, 7, 1), 0.0)
    frames = sent(spout)
    assert [f[4] for f in frames] == [MARKER, CONTROL]
    assert msgpack.unpackb(frames[0][13:]) == [3, 7, 1] and steps(frames) == [(Step.SAVED, 7, 3)]
    saved = LocalStorage(str(tmp_path)).read(task_file("ckpt", 7, "source", 0, 2))
    assert [(k, v) for _, k, v in decode_state(saved)] == [("next", 42)]


def test_a_task_retired_by_a_scale_down_takes_the_plan_without_it(tmp_path):
    inst = started(tmp_path, task=2, pplan_=pplan((1, 2), 3, (4, 5)), count_par=2)
    assert (inst.checkpoint.index, inst.checkpoint.parallelism) == (1, 2)
    inst.on_frame(control_frame(physical_plan=pplan((1,), 3, (4, 5))), 0.0)  # count scaled to 1: task 2 retires
    assert (inst.checkpoint.index, inst.checkpoint.parallelism) == (1, 2)


def test_a_restore_before_the_first_plan_hands_the_state_over_after_initialize(tmp_path):
    storage = LocalStorage(str(tmp_path))
    storage.write(task_file("ckpt", 2, "count", 0, 2), encode_state(KeyValueState({"b": 1}), GROUPS))
    storage.write(task_file("ckpt", 2, "count", 1, 2), encode_state(KeyValueState({"a": 7}), GROUPS))
    inst = make_instance(plan_of(2), "count", 2, 1)
    inst.checkpoint.storage = storage
    inst.on_frame(step(Step.RESTORE, 2, 1), 0.0)
    assert not inst.initialized and not hasattr(inst.component, "state")  # init_state waits for initialize
    inst.on_frame(control_frame(physical_plan=pplan((1, 2), 3, (4, 5))), 0.0)  # now it knows it is task 1 of 2
    assert dict(inst.component.state.items()) == {"a": 7}


def test_a_rollback_keeps_the_consumed_reports_not_yet_sent(tmp_path):
    """What a bolt reports consumed at a save's flush and has not sent yet still leaves after a RESTORE (the
    stream manager bounds the task's queue with it); the tuples and markers of the old epoch do not."""
    inst = started(tmp_path)
    inst.on_frame(words(3, "a", "b"), 0.0)
    inst.on_frame(marker(3, 1), 0.0)
    inst.on_frame(marker(4, 1), 0.0)  # the save flushes: the consumed report and the marker wait in out
    inst.on_frame(step(Step.RESTORE, 1, 2), 0.0)
    frames = sent(inst)
    assert [f[4] for f in frames] == [CONTROL, CONTROL, CONTROL]  # consumed, SAVED, RESTORED: no MARKER
    assert [decode_control(f).consumed for f in frames][0] == 2
    assert steps(frames) == [(Step.SAVED, 1, 1), (Step.RESTORED, 1, 1)]


def test_a_storage_that_cannot_be_written_fails_the_checkpoint_not_the_task(tmp_path):
    (tmp_path / "plain").write_text("a regular file where the storage's folder should be")
    inst = started(tmp_path / "plain" / "ckpt")
    inst.on_frame(words(3, "a"), 0.0)
    inst.on_frame(marker(3, 1), 0.0)
    inst.on_frame(marker(4, 1), 0.0)
    frames = sent(inst)
    # the topology master hears FAILED with the storage's message, not SAVED
    assert steps(frames) == [(Step.FAILED, 1, 1)]
    failed = [decode_control(f).checkpoint for f in frames if f[4] == CONTROL and decode_control(f).checkpoint][0]
    assert failed.error == (f"checkpoint storage: cannot write checkpoint file "
                            f"{tmp_path}/plain/ckpt/ckpt/1/count/task-0-of-1: Not a directory")
    # the markers still go downstream: the sink does not wait on an alignment that cannot complete
    assert [msgpack.unpackb(f[13:]) for f in frames if f[4] == MARKER] == [[1, 1, 1]]
    # the task goes on; its errors say the storage failed, not its code
    inst.on_frame(words(4, "b"), 0.0)
    assert dict(inst.component.state.items()) == {"a": 1, "b": 1}
    user = {}
    inst.errors.report(user)
    assert [(e["where"], e["error"]) for e in user["__errors"]] == [(CHECKPOINT_STORAGE, failed.error)]
    # once the storage can be written, the next checkpoint is saved
    (tmp_path / "plain").unlink()
    inst.on_frame(marker(3, 2), 0.0)
    inst.on_frame(marker(4, 2), 0.0)
    assert steps(sent(inst)) == [(Step.SAVED, 2, 1)]
    saved = LocalStorage(str(tmp_path / "plain" / "ckpt")).read(task_file("ckpt", 2, "count", 0, 1))
    assert {k: v for _, k, v in decode_state(saved)} == {"a": 1, "b": 1}
