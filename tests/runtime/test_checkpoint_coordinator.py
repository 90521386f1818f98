"""The topology master's checkpoint coordinator as a pure state machine: plans, reports and time in."""
from squall.idl import schema
from squall.runtime.checkpoints import Broadcast, CheckpointCoordinator, Collect, Record

Step = schema.CheckpointStep


def pplan(pids=(11, 12, 13), stmgr_pid=7, plan_id="p1"):
    tm = schema.TMasterLocation(topology_name="t", host="h", control_port=1, pid=1, run_id="r")
    return schema.PhysicalPlan(
        topology_name="t", packing_plan_id=plan_id, status=schema.TopologyStatus.RUNNING, tmaster=tm,
        stmgrs=[schema.StMgrLocation(container=1, host="h", data_port=2, pid=stmgr_pid)],
        instances=[schema.InstanceLocation(id=schema.InstanceId("c", task, task - 1), container=1, pid=pid)
                   for task, pid in enumerate(pids, start=1)])


def carried(actions):
    """Broadcasts in order, those a Record carries out once written included; the Records written."""
    messages, records, collects = [], [], []
    for a in actions:
        if isinstance(a, Record):
            records.append(a.record)
            m, _, c = carried(list(a.then))
            messages += m
            collects += c
        elif isinstance(a, Broadcast):
            messages.append(a.message)
        elif isinstance(a, Collect):
            collects.append(a.keep)
    return messages, records, collects


def report(step, cid, task, epoch=1, **kw):
    return schema.CheckpointMessage(step=step, checkpoint_id=cid, epoch=epoch, task_id=task, **kw)


def restored(coord, epoch, now, tasks=(1, 2, 3)):
    out = []
    for t in tasks:
        out += coord.on_report(report(Step.RESTORED, coord.latest(), t, epoch), now)
    return out


def test_the_first_plan_rolls_every_task_back_and_resumes_once_all_restored():
    coord = CheckpointCoordinator(interval=1.0, timeout=10.0, kept=2, mode="EFFECTIVELY_ONCE")
    messages, records, collects = carried(coord.on_plan(pplan(), now=0.0))
    assert [(m.step, m.checkpoint_id, m.epoch) for m in messages] == [(Step.RESTORE, 0, 1)]
    assert records[-1].epoch == 1 and collects == [()]  # what an earlier term left is collected
    assert coord.on_tick(5.0) == []  # no checkpoint while restoring
    assert coord.restoring() == messages[0]  # for a stream manager that registers meanwhile
    assert carried(restored(coord, 1, 0.2, tasks=(1, 2)))[0] == []
    assert carried(coord.on_report(report(Step.RESTORED, 0, 3, epoch=0), 0.2))[0] == []  # another epoch's
    messages, _, _ = carried(restored(coord, 1, 0.3, tasks=(3,)))
    assert [(m.step, m.epoch) for m in messages] == [(Step.RESUME, 1)] and coord.restoring() is None
    assert abs(coord.stats().last_restore_ms - 300) < 1e-6


def test_a_checkpoint_starts_every_interval_and_completes_when_every_task_saved():
    coord = CheckpointCoordinator(interval=1.0, timeout=10.0, kept=2, mode="EFFECTIVELY_ONCE", wall=lambda: 99.0)
    coord.on_plan(pplan(), 0.0)
    restored(coord, 1, 0.0)
    assert coord.on_tick(0.5) == []
    messages, records, _ = carried(coord.on_tick(1.0))
    assert [(m.step, m.checkpoint_id) for m in messages] == [(Step.START, 1)] and records[-1].last_id == 1
    assert coord.on_tick(2.5) == []  # one at a time
    coord.on_report(report(Step.SAVED, 1, 1, bytes=10, align_ms=0.0), 1.1)
    coord.on_report(report(Step.SAVED, 1, 1, bytes=10, align_ms=0.0), 1.1)  # twice: counted once
    coord.on_report(report(Step.SAVED, 1, 2, bytes=5, align_ms=3.0), 1.1)
    messages, records, collects = carried(coord.on_report(report(Step.SAVED, 1, 3, bytes=1, align_ms=2.0), 1.2))
    assert [(m.step, m.checkpoint_id) for m in messages] == [(Step.DONE, 1)]
    done = records[-1].complete[0]
    assert (done.checkpoint_id, done.bytes, done.align_ms, done.time) == (1, 16, 3.0, 99.0)
    assert abs(done.duration_ms - 200) < 1e-6 and collects == [(1,)]
    # the next ones: ids grow, the record keeps the newest `kept`
    for cid, t in ((2, 3.0), (3, 5.0)):
        assert carried(coord.on_tick(t))[0][0].checkpoint_id == cid
        for task in (1, 2, 3):
            out = coord.on_report(report(Step.SAVED, cid, task, bytes=1), t + 0.1)
    _, records, collects = carried(out)
    assert [r.checkpoint_id for r in records[-1].complete] == [3, 2] and collects == [(3, 2)]
    assert coord.latest() == 3 and coord.stats().completed == 3


def test_a_changed_plan_abandons_the_checkpoint_under_way_and_rolls_back_to_the_last_complete():
    coord = CheckpointCoordinator(interval=1.0, timeout=10.0, kept=2, mode="EFFECTIVELY_ONCE")
    coord.on_plan(pplan(), 0.0)
    restored(coord, 1, 0.0)
    coord.on_tick(1.0)
    for task in (1, 2, 3):
        coord.on_report(report(Step.SAVED, 1, task), 1.1)
    coord.on_tick(2.1)  # checkpoint 2 starts
    coord.on_report(report(Step.SAVED, 2, 1), 2.2)
    assert coord.on_plan(pplan(), 2.3) == []  # the same plan again: nothing to do
    messages, records, _ = carried(coord.on_plan(pplan(pids=(11, 99, 13)), 2.4))  # task 2's process died
    assert [(m.step, m.checkpoint_id, m.epoch) for m in messages] == [(Step.RESTORE, 1, 2)]
    assert coord.stats().failed == 1
    assert carried(coord.on_report(report(Step.SAVED, 2, 2), 2.5))[0] == []  # the abandoned one's
    # a stream manager that came back (new pid) rolls back again, in a new epoch, while restoring
    messages, _, _ = carried(coord.on_plan(pplan(pids=(11, 99, 13), stmgr_pid=8), 2.6))
    assert [(m.step, m.epoch) for m in messages] == [(Step.RESTORE, 3)]
    assert carried(restored(coord, 2, 2.7))[0] == []  # the old epoch's restores do not resume
    assert [m.step for m in carried(restored(coord, 3, 2.8))[0]] == [Step.RESUME]
    assert abs(coord.stats().last_restore_ms - 400) < 1e-6  # from the first failure to the resume


def test_timeouts_abandon_a_checkpoint_and_repeat_a_restore():
    coord = CheckpointCoordinator(interval=1.0, timeout=5.0, kept=2, mode="EFFECTIVELY_ONCE")
    coord.on_plan(pplan(), 0.0)
    messages, _, _ = carried(coord.on_tick(6.0))
    assert [(m.step, m.epoch) for m in messages] == [(Step.RESTORE, 2)]
    restored(coord, 2, 6.5)
    coord.on_tick(7.5)  # checkpoint 1
    assert coord.on_tick(12.0) == []
    assert coord.on_tick(13.0) == [] and coord.stats().failed == 1
    messages, _, _ = carried(coord.on_tick(13.1))
    assert [(m.step, m.checkpoint_id) for m in messages] == [(Step.START, 2)]


def test_a_new_term_goes_on_above_the_ids_and_epochs_of_the_record():
    record = schema.Checkpoints(complete=[schema.CheckpointRecord(checkpoint_id=40, packing_plan_id="p1", time=1.0,
                                                                  bytes=1, duration_ms=1.0, align_ms=0.0)],
                                last_id=42, epoch=7)
    coord = CheckpointCoordinator(interval=1.0, timeout=5.0, kept=2, mode="EFFECTIVELY_ONCE", record=record)
    messages, _, collects = carried(coord.on_plan(pplan(), 0.0))
    assert [(m.step, m.checkpoint_id, m.epoch) for m in messages] == [(Step.RESTORE, 40, 8)]
    assert collects == [(40,)]
    restored(coord, 8, 0.1)
    assert carried(coord.on_tick(1.2))[0][0].checkpoint_id == 43


def test_a_task_whose_storage_failed_abandons_the_checkpoint_at_once_with_the_storage_message():
    from squall.runtime.checkpoints import checkpoint_figures, describe_checkpoints

    coord = CheckpointCoordinator(interval=1.0, timeout=10.0, kept=2, mode="EFFECTIVELY_ONCE")
    coord.on_plan(pplan(), 0.0)
    restored(coord, 1, 0.0)
    assert carried(coord.on_tick(1.0))[0][0].checkpoint_id == 1
    coord.on_report(report(Step.SAVED, 1, 1), 1.1)
    error = "checkpoint storage: cannot write checkpoint file /full/t/1/c/task-1-of-3: No space left on device"
    assert coord.on_report(report(Step.FAILED, 1, 2, error=error), 1.2) == []
    assert coord.on_report(report(Step.SAVED, 1, 3), 1.3) == []  # no DONE for a failed checkpoint
    stats = coord.stats()
    assert (stats.completed, stats.failed, stats.last) == (0, 1, None)
    assert stats.last_failure == f"checkpoint 1: task 2: {error}"
    assert describe_checkpoints(checkpoint_figures(stats)).endswith(f"; last failure: checkpoint 1: task 2: {error}")
    assert coord.on_tick(1.5) == []  # not again at once: the next interval
    assert [(m.step, m.checkpoint_id) for m in carried(coord.on_tick(2.2))[0]] == [(Step.START, 2)]
