"""The stream manager's rules without sockets or clocks: events in, actions out (runtime/stmgr_state.py)."""
import json

import pytest

from squall.idl import decode, schema
from squall.runtime.protocol import ACK, CONTROL, HEADER_SIZE, control_frame, data_frame
from squall.runtime.stmgr_state import (REGISTER_DELAY_SECS, RETRY_SECS, Close, Connect, Connected, ConnectTMaster,
                                        Disconnected, FramesArrived, LocalTask, PauseReading, PeerIn, PeerOut,
                                        RegisterDue, Send, SendMetrics, StreamManagerState, Tick, Timer,
                                        TMasterLink, TMasterMoved, WriteBlocked)

HIGH, LOW = 100, 50
SPOUT, BOLT = LocalTask(1, "spout", 101), LocalTask(2, "bolt", 102)
TMASTER = TMasterLink("tm", 9000, 7)


def pplan(placement, plan_id="p"):
    """placement: task -> container (task 1 is the spout, the others bolts)."""
    containers = sorted(set(placement.values()) | {1})
    return schema.PhysicalPlan(
        topology_name="t", packing_plan_id=plan_id, status=schema.TopologyStatus.RUNNING,
        tmaster=schema.TMasterLocation(topology_name="t", host="tm", control_port=9000, pid=7, run_id="r"),
        stmgrs=[schema.StMgrLocation(container=c, host="h", data_port=1000 + c, pid=c) for c in containers],
        instances=[schema.InstanceLocation(id=schema.InstanceId("spout" if t == 1 else "bolt", t, -1),
                                           container=c, pid=100 + t) for t, c in sorted(placement.items())])


def make(**kw):
    return StreamManagerState(1, "h", {"spout"}, HIGH, LOW, pid=99, **kw)


def set_plan(sm, placement, plan_id="p", now=0.0):
    """The topology master (connected if it was not) sends a physical plan."""
    if sm.tmaster is None:
        sm.handle(Connected(TMASTER, now))
    return sm.handle(FramesArrived(TMASTER, [control_frame(physical_plan=pplan(placement, plan_id))], now))


def started(placement, *local, links_up=True):
    """A stream manager of container 1 with ``local`` tasks connected and the plan ``placement``."""
    sm = make()
    for who in local:
        sm.handle(Connected(who, 0.0))
    set_plan(sm, placement)
    if links_up:
        for cid in sm.peers:
            sm.handle(Connected(PeerOut(cid), 0.0))
    return sm


def sent(actions, who):
    return [a.data for a in actions if type(a) is Send and a.who == who]


def control(data):
    assert data[4] == CONTROL
    return decode(schema.Control, data[HEADER_SIZE:])


def backpressure(actions, who):
    """The Backpressure(on) flags sent to ``who``, in order."""
    return [control(d).backpressure.on for d in sent(actions, who) if d[4] == CONTROL
            and control(d).backpressure is not None]


def pauses(actions, who):
    return [a.paused for a in actions if type(a) is PauseReading and a.who == who]


def frame(dest, size=0, count=0, ftype=None):
    payload = b"\xc1" * size  # not msgpack: the stream manager must not decode it
    return data_frame(dest, payload, count) if ftype is None else data_frame(dest, payload, count, ftype)


# ------------------------------------------------------------------ identities
def test_identities_are_typed_values_and_a_task_is_known_by_its_task_id_and_pid():
    assert LocalTask(1, "spout", 101) == LocalTask(1, "spout", 101, ((1, "spout"),))  # the same process again
    # another process for the task (restarted, or a chain split): sends to one never reach the other's connection
    assert LocalTask(1, "spout", 101) != LocalTask(1, "spout", 999)
    assert LocalTask(1, "spout", 101) != LocalTask(2, "spout", 101)
    assert PeerOut(2) != PeerIn(2) and PeerOut(2) == PeerOut(2)
    assert len({SPOUT, BOLT, PeerOut(2), PeerIn(2), TMASTER}) == 5
    with pytest.raises(AttributeError):
        PeerOut(2).container = 3
    loc = schema.TMasterLocation(topology_name="t", host="tm", control_port=9000, pid=7, run_id="r")
    assert TMasterLink.at(loc) == TMASTER


# ------------------------------------------------------------------ routing
def test_a_frame_for_a_local_task_goes_to_its_instance_undecoded():
    sm = started({1: 1, 2: 1}, SPOUT, BOLT)
    f = frame(2, size=10)
    out = sm.handle(FramesArrived(SPOUT, [f], 0.0))
    assert out == [Send(BOLT, f)]
    assert sm.forwarded_frames == 1 and sm.forwarded_bytes == len(f)


def test_a_frame_for_a_remote_task_goes_unchanged_to_its_containers_link():
    sm = started({1: 1, 2: 1, 3: 2}, SPOUT, BOLT)
    f = frame(3, size=10)
    assert sm.handle(FramesArrived(SPOUT, [f], 0.0)) == [Send(PeerOut(2), f)]


def test_a_plan_opens_one_link_per_other_container():
    sm = make()
    out = set_plan(sm, {1: 1, 2: 2, 3: 3})
    assert [a for a in out if type(a) is Connect] == [Connect(PeerOut(2), "h", 1002), Connect(PeerOut(3), "h", 1003)]


def test_frames_wait_while_a_link_is_down_and_leave_in_order_when_it_is_up():
    sm = started({1: 1, 3: 2}, SPOUT, links_up=False)
    f1, f2 = frame(3, size=1), frame(3, size=2)
    assert sm.handle(FramesArrived(SPOUT, [f1, f2], 0.0)) == []
    assert sm.peers[2].buffered == len(f1) + len(f2)
    out = sm.handle(Connected(PeerOut(2), 1.0))
    assert sent(out, PeerOut(2)) == [f1, f2]
    assert sm.peers[2].buffer == [] and sm.peers[2].buffered == 0
    f3 = frame(3)
    assert sm.handle(FramesArrived(SPOUT, [f3], 1.0)) == [Send(PeerOut(2), f3)]


def test_a_lost_link_reconnects_after_a_pause_and_buffers_meanwhile():
    sm = started({1: 1, 3: 2}, SPOUT)
    out = sm.handle(Disconnected(PeerOut(2), 0.0))
    assert out == [Connect(PeerOut(2), "h", 1002, RETRY_SECS)]
    f = frame(3)
    assert sm.handle(FramesArrived(SPOUT, [f], 0.0)) == []
    assert sent(sm.handle(Connected(PeerOut(2), 1.0)), PeerOut(2)) == [f]


def test_a_frame_with_no_route_is_dropped_and_counted():
    sm = started({1: 1, 2: 1}, SPOUT, BOLT)
    out = sm.handle(FramesArrived(SPOUT, [frame(9)], 0.0))  # no plan names task 9
    assert out == [] and sm.dropped_frames == 1 and sm.forwarded_frames == 0


def test_frames_for_a_local_task_of_the_plan_not_connected_are_held_until_it_connects():
    sm = started({1: 1, 2: 1, 3: 2}, SPOUT)  # task 2 is in the plan, not connected (starting, or restarting)
    f1, f2, f3 = frame(2, size=1, count=1), frame(2, size=2, count=1), frame(2, size=3, count=1)
    assert sm.handle(FramesArrived(SPOUT, [f1, f2], 0.0)) == []
    assert sm.handle(FramesArrived(PeerIn(2), [f3], 0.0)) == []  # from another container too
    assert sm.dropped_frames == 0 and sm.held_bytes == len(f1) + len(f2) + len(f3)
    out = sm.handle(Connected(BOLT, 1.0))
    assert sent(out, BOLT)[1:] == [f1, f2, f3]  # after its physical plan, in order
    assert sm.held == {} and sm.held_bytes == 0 and sm.queues[2].queued == 3


def test_a_restarted_stream_manager_holds_frames_until_a_plan_says_where_they_go():
    sm = make()
    sm.handle(Connected(SPOUT, 0.0))  # its instances rejoin it before the topology master's plan
    local, remote, unknown = frame(2, size=1), frame(3, size=2), frame(9, size=3)
    assert sm.handle(FramesArrived(SPOUT, [local, remote, unknown], 0.0)) == []
    assert sm.dropped_frames == 0 and sm.held_bytes == len(local) + len(remote) + len(unknown)
    set_plan(sm, {1: 1, 2: 1, 3: 2})
    assert sm.held == {2: [local]} and sm.dropped_frames == 1  # task 9: no plan names it
    assert sm.peers[2].buffer == [remote]  # leaves once the link is up
    assert sent(sm.handle(Connected(PeerOut(2), 0.0)), PeerOut(2)) == [remote]
    assert sent(sm.handle(Connected(BOLT, 0.0)), BOLT)[1:] == [local]
    assert sm.held_bytes == 0


def test_held_frames_of_a_task_that_leaves_the_plan_are_dropped():
    sm = started({1: 1, 2: 1}, SPOUT)
    sm.handle(FramesArrived(SPOUT, [frame(2), frame(2)], 0.0))
    set_plan(sm, {1: 1}, plan_id="p2")
    assert sm.held == {} and sm.held_bytes == 0 and sm.dropped_frames == 2


def test_held_frames_over_the_high_mark_are_backpressure_until_delivered():
    sm = started({1: 1, 2: 1}, SPOUT)
    out = sm.handle(FramesArrived(SPOUT, [frame(2, size=HIGH)], 0.0))
    assert sm.bp_self and backpressure(out, SPOUT) == [True] and pauses(out, SPOUT) == [True]
    out = sm.handle(Connected(BOLT, 1.0))
    assert not sm.bp_self and backpressure(out, SPOUT) == [False]


def test_frames_from_another_stream_manager_are_delivered_locally_only():
    sm = started({1: 1, 2: 1, 3: 2}, SPOUT, BOLT)
    here, there = frame(2), frame(3)
    out = sm.handle(FramesArrived(PeerIn(2), [here, there], 0.0))
    assert out == [Send(BOLT, here)]  # never forwarded again
    assert sm.dropped_frames == 1


def test_ack_frames_are_routed_like_data_frames():
    sm = started({1: 1, 2: 1, 3: 2}, SPOUT, BOLT)
    local, remote = frame(1, count=1, ftype=ACK), frame(3, count=1, ftype=ACK)
    out = sm.handle(FramesArrived(BOLT, [local, remote], 0.0))
    assert out == [Send(SPOUT, local), Send(PeerOut(2), remote)]
    from_peer = frame(2, ftype=ACK)
    assert sm.handle(FramesArrived(PeerIn(2), [from_peer], 0.0)) == [Send(BOLT, from_peer)]


def test_a_frame_a_task_must_not_send_closes_that_connection_only():
    sm = started({1: 1, 2: 1}, SPOUT, BOLT)
    f = frame(2)
    out = sm.handle(FramesArrived(SPOUT, [f, control_frame(heartbeat=schema.Heartbeat(1.0)), frame(2)], 0.0))
    assert out[0] == Send(BOLT, f)  # what came before it was routed
    assert out[1] == Close(SPOUT, "unexpected control message from task 1")
    assert sent(out[2:], BOLT) == [] and 1 not in sm.local and 2 in sm.local
    out = sm.handle(FramesArrived(PeerOut(2), [f], 0.0))  # outbound links are never read from
    assert out[0] == Close(PeerOut(2), "unexpected frames on an outbound link")
    assert Connect(PeerOut(2), "h", 1002, RETRY_SECS) in out or 2 not in sm.peers


# ------------------------------------------------------------------ backpressure
def test_a_write_blocked_connection_throttles_local_spouts_and_tells_peers():
    sm = started({1: 1, 2: 1, 3: 2}, SPOUT, BOLT)
    out = sm.handle(WriteBlocked(BOLT, True, 1.0))  # its write buffer crossed the high water mark
    assert sm.bp_self and sm.throttled
    assert pauses(out, SPOUT) == [True] and pauses(out, BOLT) == []  # bolts are always read
    assert backpressure(out, SPOUT) == [True]  # the spout stops emitting
    assert backpressure(out, PeerOut(2)) == [True]  # and so must the other containers' spouts
    assert sm.handle(WriteBlocked(BOLT, True, 1.1)) == []  # told once
    out = sm.handle(WriteBlocked(BOLT, False, 2.0))  # back under the low mark
    assert not sm.bp_self
    assert pauses(out, SPOUT) == [False] and backpressure(out, SPOUT) == [False]
    assert backpressure(out, PeerOut(2)) == [False]
    assert sm.bp_episodes == 1


def test_a_link_that_comes_up_during_backpressure_is_told_then_and_only_then():
    sm = started({1: 1, 2: 1, 3: 2}, SPOUT, BOLT, links_up=False)
    out = sm.handle(WriteBlocked(BOLT, True, 1.0))
    assert backpressure(out, PeerOut(2)) == []  # no message on a link before its handshake
    assert backpressure(sm.handle(Connected(PeerOut(2), 1.5)), PeerOut(2)) == [True]


def test_a_lost_connection_is_no_longer_blocked():
    sm = started({1: 1, 2: 1, 3: 2}, SPOUT, BOLT)
    sm.handle(WriteBlocked(PeerOut(2), True, 1.0))
    out = sm.handle(Disconnected(PeerOut(2), 2.0))
    assert not sm.bp_self and pauses(out, SPOUT) == [False]


def test_a_spout_that_connects_while_throttled_is_paused_and_told():
    sm = started({1: 1, 2: 1}, BOLT)
    sm.handle(WriteBlocked(BOLT, True, 1.0))
    out = sm.handle(Connected(SPOUT, 1.5))
    assert pauses(out, SPOUT) == [True] and backpressure(out, SPOUT) == [True]
    out = sm.handle(WriteBlocked(BOLT, False, 2.0))
    assert pauses(out, SPOUT) == [False] and backpressure(out, SPOUT) == [False]
    other_bolt = LocalTask(3, "bolt", 103)
    sm.handle(WriteBlocked(BOLT, True, 3.0))
    assert pauses(sm.handle(Connected(other_bolt, 3.0)), other_bolt) == []  # bolts are never paused


def test_a_local_queue_over_its_bound_throttles_until_consumed_brings_it_back():
    sm = started({1: 1, 2: 1, 3: 2}, SPOUT, BOLT)
    out = sm.handle(FramesArrived(SPOUT, [frame(2, count=600)], 0.0))
    assert pauses(out, SPOUT) == []  # 600 queued: under the bound (a batch until the rate is known)
    out = sm.handle(FramesArrived(SPOUT, [frame(2, count=600)], 0.1))
    assert sm.bp_self and pauses(out, SPOUT) == [True] and backpressure(out, PeerOut(2)) == [True]
    assert sm.queues[2].queued == 1200
    out = sm.handle(FramesArrived(BOLT, [control_frame(consumed=300)], 0.2))
    assert out == [] and sm.bp_self  # 900 queued: still over half the bound
    out = sm.handle(FramesArrived(BOLT, [control_frame(consumed=500)], 0.3))
    assert not sm.bp_self and pauses(out, SPOUT) == [False] and backpressure(out, PeerOut(2)) == [False]


def test_a_closed_task_takes_its_queue_congestion_with_it():
    sm = started({1: 1, 2: 1}, SPOUT, BOLT)
    sm.handle(FramesArrived(SPOUT, [frame(2, count=2000)], 0.0))
    assert sm.bp_self
    out = sm.handle(Disconnected(BOLT, 1.0))
    assert not sm.bp_self and pauses(out, SPOUT) == [False]


def test_a_task_that_connects_again_starts_with_an_empty_queue():
    sm = started({1: 1, 2: 1}, SPOUT, BOLT)
    sm.handle(FramesArrived(SPOUT, [frame(2, count=2000)], 0.0))
    assert sm.bp_self
    out = sm.handle(Connected(LocalTask(2, "bolt", 555), 1.0))  # the shell closed its old connection
    assert not sm.bp_self and pauses(out, SPOUT) == [False]
    assert sm.queues[2].queued == 0 and sm.local[2].pid == 555


def test_another_containers_backpressure_throttles_local_spouts():
    sm = started({1: 1, 2: 1, 3: 2}, SPOUT, BOLT)
    on = control_frame(backpressure=schema.Backpressure(2, True))
    out = sm.handle(FramesArrived(PeerIn(2), [on], 1.0))
    assert sm.throttled and not sm.bp_self
    assert pauses(out, SPOUT) == [True] and backpressure(out, SPOUT) == [True]
    assert backpressure(out, PeerOut(2)) == []  # not this container's congestion: peers are not told
    off = control_frame(backpressure=schema.Backpressure(2, False))
    out = sm.handle(FramesArrived(PeerIn(2), [off], 2.0))
    assert not sm.throttled and pauses(out, SPOUT) == [False] and backpressure(out, SPOUT) == [False]


def test_a_lost_inbound_link_ends_its_containers_backpressure():
    sm = started({1: 1, 2: 1, 3: 2}, SPOUT, BOLT)
    sm.handle(FramesArrived(PeerIn(2), [control_frame(backpressure=schema.Backpressure(2, True))], 1.0))
    out = sm.handle(Disconnected(PeerIn(2), 2.0))
    assert not sm.throttled and pauses(out, SPOUT) == [False]
    # an inbound link that connects again voids what its earlier connection said
    sm.handle(FramesArrived(PeerIn(2), [control_frame(backpressure=schema.Backpressure(2, True))], 3.0))
    out = sm.handle(Connected(PeerIn(2), 4.0))
    assert not sm.throttled and pauses(out, SPOUT) == [False]


def test_a_down_link_buffering_over_high_starts_backpressure_and_only_under_low_ends_it():
    sm = started({1: 1, 3: 2, 4: 3}, SPOUT, links_up=False)
    to_2, to_3 = frame(3, size=60 - 13), frame(4, size=60 - 13)  # 60 bytes each
    out = sm.handle(FramesArrived(SPOUT, [to_2], 0.0))
    assert not sm.bp_self and out == []  # 60 bytes held for container 2: under the high mark
    out = sm.handle(FramesArrived(SPOUT, [to_3, to_3], 0.0))
    assert sm.bp_self and pauses(out, SPOUT) == [True]  # 120 bytes held for container 3
    out = sm.handle(Connected(PeerOut(3), 1.0))
    assert sent(out, PeerOut(3))[:2] == [to_3, to_3] and sm.bp_self  # a big flush: judged by its transport
    out = sm.handle(Tick(2.0, 2.0))
    assert pauses(out, SPOUT) == [] and sm.bp_self  # container 2's link still holds 60 > low bytes
    out = sm.handle(Connected(PeerOut(2), 3.0))
    assert not sm.bp_self and pauses(out, SPOUT) == [False]


def test_a_flushed_link_ends_backpressure_by_its_transports_signal():
    sm = started({1: 1, 3: 2}, SPOUT, links_up=False)
    sm.handle(FramesArrived(SPOUT, [frame(3, size=150)], 0.0))
    assert sm.bp_self
    out = sm.handle(Connected(PeerOut(2), 1.0))
    assert pauses(out, SPOUT) == [] and sm.bp_self  # no resuming before the transport has had its say
    sm.handle(WriteBlocked(PeerOut(2), True, 1.0))  # the flush took its write buffer over high
    out = sm.handle(Tick(1.5, 1.5))
    assert pauses(out, SPOUT) == [] and sm.bp_self
    out = sm.handle(WriteBlocked(PeerOut(2), False, 2.0))
    assert not sm.bp_self and pauses(out, SPOUT) == [False]


def test_a_flush_the_transport_took_without_going_over_high_ends_backpressure_at_the_next_tick():
    sm = started({1: 1, 3: 2}, SPOUT, links_up=False)
    sm.handle(FramesArrived(SPOUT, [frame(3, size=150)], 0.0))
    sm.handle(Connected(PeerOut(2), 1.0))  # the socket took most of it: no WriteBlocked comes
    assert sm.bp_self
    out = sm.handle(Tick(2.0, 2.0))
    assert not sm.bp_self and pauses(out, SPOUT) == [False]


def test_time_in_backpressure_is_measured_from_event_times():
    sm = started({1: 1, 2: 1}, SPOUT, BOLT)
    sm.handle(WriteBlocked(BOLT, True, 10.0))
    sm.handle(WriteBlocked(BOLT, False, 10.5))
    assert sm.backpressure_ms(11.0) == pytest.approx(500)
    assert sm.backpressure_ms(12.0) == 0
    sm.handle(WriteBlocked(BOLT, True, 20.0))
    assert sm.backpressure_ms(22.0) == pytest.approx(2000)  # still throttled: counted up to now
    sm.handle(WriteBlocked(BOLT, False, 23.0))
    assert sm.backpressure_ms(30.0) == pytest.approx(1000)


# ------------------------------------------------------------------ retiring
def test_a_task_that_left_the_plan_keeps_its_route_until_it_is_gone():
    count3 = LocalTask(3, "bolt", 103)
    sm = started({1: 1, 2: 2, 3: 1, 4: 2}, SPOUT, count3)
    set_plan(sm, {1: 1, 2: 2}, "new", now=100.0)  # scaled down: tasks 3 (local) and 4 (container 2) leave
    assert set(sm.stale) == {3, 4}

    # a batch the spout made with the old plan reaches the stream manager after the new plan
    f3, f4 = frame(3), frame(4)
    assert sm.handle(FramesArrived(SPOUT, [f3, f4], 100.1)) == [Send(count3, f3), Send(PeerOut(2), f4)]
    assert sm.dropped_frames == 0

    # once the local task is gone its route goes; the remote one expires
    sm.handle(Disconnected(count3, 101.0))
    assert 3 not in sm.local and 3 not in sm.stale
    assert sm.handle(FramesArrived(SPOUT, [frame(3)], 101.0)) == [] and sm.dropped_frames == 1
    sm.handle(Tick(100.0 + sm.stale_secs - 1, 0.0))
    assert set(sm.stale) == {4}
    out = sm.handle(Tick(100.0 + sm.stale_secs, 0.0))
    assert sm.stale == {} and 2 in sm.peers and Close(PeerOut(2)) not in out  # container 2 is still in the plan
    assert sm.handle(FramesArrived(SPOUT, [frame(4)], 200.0)) == [] and sm.dropped_frames == 2


def test_the_link_to_a_container_that_left_stays_while_its_tasks_may_receive():
    sm = started({1: 1, 2: 1, 3: 2}, SPOUT, BOLT)
    out = set_plan(sm, {1: 1, 2: 1}, "new")  # container 2 (task 3) leaves
    assert Close(PeerOut(2)) not in out and sm.peers[2].retiring
    f = frame(3)
    assert sm.handle(FramesArrived(SPOUT, [f], 1.0)) == [Send(PeerOut(2), f)]
    out = sm.handle(Disconnected(PeerOut(2), 2.0))  # its stream manager exits: link and routes go
    assert 2 not in sm.peers and sm.stale == {}
    assert [a for a in out if type(a) is Connect] == []  # no reconnecting


def test_a_retiring_link_is_closed_once_its_stale_routes_expire():
    sm = started({1: 1, 2: 1, 3: 2}, SPOUT, BOLT)
    set_plan(sm, {1: 1, 2: 1}, "new", now=5.0)
    assert Close(PeerOut(2)) in sm.handle(Tick(5.0 + sm.stale_secs, 0.0))
    assert 2 not in sm.peers


def test_a_link_to_a_container_that_left_with_nothing_routed_is_closed_at_once():
    sm = started({1: 1, 2: 1, 3: 2}, SPOUT, BOLT, links_up=False)
    out = set_plan(sm, {1: 1, 2: 1}, "new")  # the link never came up: no stale route can use it
    assert Close(PeerOut(2)) in out and 2 not in sm.peers and sm.stale == {}


def test_a_container_that_moved_gets_a_new_link():
    sm = started({1: 1, 3: 2}, SPOUT)
    moved = pplan({1: 1, 3: 2}, "moved")
    moved.stmgrs[1].data_port = 2002
    out = sm.handle(FramesArrived(TMASTER, [control_frame(physical_plan=moved)], 1.0))
    assert out.index(Close(PeerOut(2))) < out.index(Connect(PeerOut(2), "h", 2002))
    assert not sm.peers[2].up


# ------------------------------------------------------------------ plan, registration, tmaster
def test_instances_get_the_plan_when_it_changes_and_when_they_connect_if_they_are_in_it():
    sm = make()
    sm.handle(Connected(SPOUT, 0.0))
    out = set_plan(sm, {1: 1, 2: 1})
    plan_frames = sent(out, SPOUT)
    assert len(plan_frames) == 1 and control(plan_frames[0]).physical_plan.packing_plan_id == "p"
    out = sm.handle(Connected(BOLT, 1.0))
    assert sent(out, BOLT) == plan_frames
    stranger = LocalTask(7, "bolt", 107)
    assert sent(sm.handle(Connected(stranger, 1.0)), stranger) == []  # not in the plan (yet)


def test_instances_connecting_together_make_one_registration():
    sm = make()
    assert sm.handle(Connected(TMASTER, 0.0)) == [Send(TMASTER, sm.registration_frame())]
    assert Timer(REGISTER_DELAY_SECS, RegisterDue()) in sm.handle(Connected(SPOUT, 0.0))
    assert [a for a in sm.handle(Connected(BOLT, 0.0)) if type(a) is Timer] == []
    sm.data_port = 4567
    out = sm.handle(RegisterDue())
    reg = control(sent(out, TMASTER)[0]).register_stmgr
    assert (reg.stmgr.container, reg.stmgr.host, reg.stmgr.data_port, reg.stmgr.pid) == (1, "h", 4567, 99)
    assert [(i.id.task_id, i.id.component, i.pid) for i in reg.instances] == [(1, "spout", 101), (2, "bolt", 102)]
    assert Timer(REGISTER_DELAY_SECS, RegisterDue()) in sm.handle(Disconnected(BOLT, 1.0))
    reg = control(sent(sm.handle(RegisterDue()), TMASTER)[0]).register_stmgr
    assert [i.id.task_id for i in reg.instances] == [1]


def test_no_registration_without_a_topology_master():
    sm = make()
    sm.handle(Connected(SPOUT, 0.0))
    assert sm.handle(RegisterDue()) == []


def test_the_stream_manager_follows_the_topology_master():
    sm = make()
    sm.handle(Connected(TMASTER, 0.0))
    loc = schema.TMasterLocation(topology_name="t", host="tm", control_port=9000, pid=7, run_id="r")
    assert sm.handle(TMasterMoved(loc)) == []  # where it is connected already
    assert sm.handle(TMasterMoved(None)) == []  # no record for now: stay
    other = schema.TMasterLocation(topology_name="t", host="tm2", control_port=9001, pid=8, run_id="r")
    assert sm.handle(TMasterMoved(other)) == [Close(TMASTER), ConnectTMaster()]
    assert sm.tmaster is None
    # frames from the one it left are ignored
    assert sm.handle(FramesArrived(TMASTER, [control_frame(physical_plan=pplan({1: 1}))], 1.0)) == []
    assert sm.pplan is None
    new = TMasterLink.at(other)
    assert sm.handle(Connected(new, 1.0)) == [Send(new, sm.registration_frame())]
    assert sm.handle(Disconnected(new, 2.0)) == [ConnectTMaster(RETRY_SECS)]


def test_ticks_send_heartbeats_and_metrics_rows():
    sm = started({1: 1, 2: 1, 3: 2}, SPOUT, BOLT, links_up=False)
    sm.handle(FramesArrived(SPOUT, [frame(2, count=5), frame(3, size=7)], 0.0))
    out = sm.handle(Tick(0.0, 1000.0, transport_unsent=11))
    assert [control(d).heartbeat.time for d in sent(out, TMASTER)] == [1000.0]
    assert [a for a in out if type(a) is SendMetrics] == []
    assert sm.handle(Tick(1.0, 1001.0)) == []
    sm.handle(WriteBlocked(BOLT, True, 4.0))
    out = sm.handle(Tick(5.0, 1005.0, transport_unsent=11))
    assert len(sent(out, TMASTER)) == 1  # the next heartbeat
    (row,) = [a.row for a in out if type(a) is SendMetrics]
    user = json.loads(row.user)
    assert (row.process, row.container, row.pid, row.interval_secs) == ("stmgr", 1, 99, 5.0)
    assert row.backpressure_ms == pytest.approx(1000) and row.queue_depth == 5
    assert user["frames_forwarded"] == 2 and user["queued_tuples"] == {"1": 0, "2": 5}
    assert user["backpressure_episodes"] == 1
    assert user["unsent_bytes"] == 11 + sm.peers[2].buffered
    sm.handle(Tick(10.0, 1010.0))
    assert sm.forwarded_frames == 0 and sm.bp_episodes == 0  # counted per bucket


def test_a_chain_connects_once_for_its_tasks_and_a_task_taken_over_stays_with_its_new_process():
    chain = LocalTask(1, "spout", 101, ((1, "spout"), (2, "bolt")))
    sm = started({1: 1, 2: 1}, chain)
    assert sm.local == {1: chain, 2: chain}
    f = frame(2, count=1)
    assert sm.handle(FramesArrived(PeerIn(2), [f], 0.0)) == [Send(chain, f)]
    assert [(i.id.task_id, i.id.component, i.pid) for i in sm.registration().instances] == [
        (1, "spout", 101), (2, "bolt", 101)]
    # the chain is split by an update: task 1's new process connects while the chain still runs task 2
    alone = LocalTask(1, "spout", 201)
    sm.handle(Connected(alone, 1.0))
    assert sm.local == {1: alone, 2: chain}
    assert [(i.id.task_id, i.pid) for i in sm.registration().instances] == [(1, 201), (2, 101)]
    [to_chain] = sm.handle(FramesArrived(PeerIn(2), [f], 1.5))  # task 2's frames still go to the chain's process
    assert to_chain == Send(chain, f) and to_chain.who.pid == 101 and to_chain != Send(alone, f)
    sm.handle(Disconnected(chain, 2.0))  # the retired chain leaves: task 1 stays with its new process
    assert sm.local == {1: alone} and 1 in sm.queues


def test_a_spout_headed_chain_is_told_to_stop_but_still_read_so_its_bolts_consumed_reports_end_it():
    """A chain spout -> bolt whose bolt also takes tuples through the stream manager: its queue over the
    bound throttles the spout, and only its consumed reports, sent on the same connection, end that."""
    chain = LocalTask(1, "spout", 101, ((1, "spout"), (2, "bolt")))
    sm = started({1: 1, 2: 1}, chain)
    out = sm.handle(FramesArrived(chain, [frame(2, count=1200)], 0.0))  # its bolt's input, from itself
    assert sm.bp_self and backpressure(out, chain) == [True] and pauses(out, chain) == []
    out = sm.handle(FramesArrived(chain, [control_frame(consumed=1200)], 0.5))
    assert not sm.bp_self and backpressure(out, chain) == [False] and pauses(out, chain) == []
    sm.handle(FramesArrived(chain, [frame(2, count=1200)], 1.0))
    assert pauses(sm.handle(Connected(chain, 1.5)), chain) == []  # connecting while throttled: told, read


# ------------------------------------------------------------------ checkpoints
def checkpoint_frame(step, cid=1, epoch=1, task=None):
    return control_frame(checkpoint=schema.CheckpointMessage(step=step, checkpoint_id=cid, epoch=epoch, task_id=task))


def test_markers_are_routed_like_tuples_locally_and_across_containers():
    from squall.runtime.protocol import MARKER

    sm = started({1: 1, 2: 1, 3: 2}, SPOUT, BOLT)
    local, remote = frame(2, size=4, ftype=MARKER), frame(3, size=4, ftype=MARKER)
    assert sm.handle(FramesArrived(SPOUT, [local, remote], 0.0)) == [Send(BOLT, local), Send(PeerOut(2), remote)]
    incoming = frame(2, size=4, ftype=MARKER)
    assert sm.handle(FramesArrived(PeerIn(2), [incoming], 0.0)) == [Send(BOLT, incoming)]


def test_checkpoint_steps_go_to_local_tasks_and_their_reports_to_the_topology_master():
    Step = schema.CheckpointStep
    sm = started({1: 1, 2: 1}, SPOUT, BOLT)
    start = checkpoint_frame(Step.START)
    assert sm.handle(FramesArrived(TMASTER, [start], 0.0)) == [Send(SPOUT, start)]  # START: spouts only
    done = checkpoint_frame(Step.DONE)
    assert sm.handle(FramesArrived(TMASTER, [done], 0.0)) == [Send(SPOUT, done), Send(BOLT, done)]
    saved = checkpoint_frame(Step.SAVED, task=2)
    assert sm.handle(FramesArrived(BOLT, [saved], 0.0)) == [Send(TMASTER, saved)]


def test_a_restore_drops_the_old_epochs_frames_held_here():
    Step = schema.CheckpointStep
    sm = started({1: 1, 2: 1, 3: 2}, SPOUT, links_up=False)  # task 2 not connected, container 2 down
    sm.handle(FramesArrived(SPOUT, [frame(2, size=10, count=1), frame(3, size=10, count=1)], 0.0))
    assert sm.held_bytes > 0 and sm.peers[2].buffered > 0
    restore = checkpoint_frame(Step.RESTORE, cid=0, epoch=2)
    out = sm.handle(FramesArrived(TMASTER, [restore], 0.0))
    assert sent(out, SPOUT) == [restore]
    assert sm.held == {} and sm.held_bytes == 0 and sm.peers[2].buffer == [] and sm.peers[2].buffered == 0
    assert sent(sm.handle(Connected(BOLT, 1.0)), BOLT) == [sm.pplan_frame]  # nothing stale delivered


def test_a_throttled_spout_is_read_during_a_restore_so_that_its_restored_report_arrives():
    Step = schema.CheckpointStep
    sm = started({1: 1, 2: 1, 3: 2}, SPOUT, BOLT)
    sm.handle(FramesArrived(PeerIn(2), [control_frame(backpressure=schema.Backpressure(2, True))], 0.0))
    assert 1 in sm.paused
    out = sm.handle(FramesArrived(TMASTER, [checkpoint_frame(Step.RESTORE, cid=0, epoch=2)], 0.0))
    assert pauses(out, SPOUT) == [False]  # still told to stop emitting, but read
    restored = checkpoint_frame(Step.RESTORED, cid=0, epoch=2, task=1)
    assert sm.handle(FramesArrived(SPOUT, [restored], 0.0)) == [Send(TMASTER, restored)]
    out = sm.handle(FramesArrived(TMASTER, [checkpoint_frame(Step.RESUME, cid=0, epoch=2)], 0.0))
    assert pauses(out, SPOUT) == [True]  # still throttled: not read again until it ends
    assert pauses(sm.handle(FramesArrived(PeerIn(2), [control_frame(backpressure=schema.Backpressure(2, False))],
                                          0.0)), SPOUT) == [False]
