"""A process's part in debug/<topology> (runtime/debugging.py) with a real local state manager, and tuple
sampling on a real instance's emit paths (runtime/instance/sampling.py): the share sampled, emit_many,
methods restored when it turns off, the events' JSON."""
import json
import logging
import random
import uuid

import pytest
from test_fast_path import Src, build, frames, instance

from squall import Grouping, debugging
from squall.debugging import LevelRequest
from squall.runtime.debugging import DebugSettings, LevelKeeper
from squall.runtime.instance.sampling import EventsLog, Sampler, event_line, skips
from squall.state import Kind, LocalStateManager
from squall.state.zookeeper import ZooKeeperStateManager
from squall.testing import wait_until


class OwnEmit(Src):
    """Its own emit: the base emit_many loops over it (an emit inside emit_many is sampled once)."""

    def emit(self, values, tup_id=None, stream="default", direct_task=None):
        return super().emit(values, tup_id, stream, direct_task)


def sampled(cls, percent, run):
    random.seed(7)
    spout = cls()
    inst, _ = instance(build(Grouping.SHUFFLE, par=2), spout)
    events = EventsLog("unused")
    sampler = Sampler(inst, events, clock=lambda: 5.0)
    sampler.set_percent(percent)
    run(spout)
    return [json.loads(line) for line in events.lines], inst, sampler


@pytest.mark.parametrize("cls", [Src, OwnEmit])
def test_a_share_of_emits_is_sampled_at_random_with_their_values(cls):
    events, inst, _ = sampled(cls, 10, lambda s: [s.emit([f"k{n}", n], tup_id=n) for n in range(20000)])
    assert 1800 <= len(events) <= 2200
    ns = [e["values"][1] for e in events]
    assert ns == sorted(set(ns)) and len({n % 10 for n in ns}) == 10  # no pattern of every tenth
    assert all(e == {"time": 5.0, "component": "src", "task": inst.task_id, "stream": "default", "id": e["values"][1],
                     "values": [f"k{e['values'][1]}", e["values"][1]]} for e in events)
    assert inst.emit_count == 20000


@pytest.mark.parametrize("cls", [Src, OwnEmit])
def test_emit_many_is_sampled_once_per_tuple(cls):
    events, inst, _ = sampled(cls, 100, lambda s: s.emit_many([[f"k{n}", n] for n in range(500)], list(range(500)),
                                                             stream="side"))
    assert [e["id"] for e in events] == list(range(500)) and {e["stream"] for e in events} == {"side"}
    events, _, _ = sampled(cls, 10, lambda s: [s.emit_many([[f"k{n}", n] for n in range(k, k + 100)])
                                             for k in range(0, 20000, 100)])
    assert 1800 <= len(events) <= 2200


@pytest.mark.parametrize("cls", [Src, OwnEmit])
def test_emit_columns_is_sampled_once_per_tuple_with_its_values(cls):
    columns = [[f"k{n}" for n in range(300)], list(range(300))]
    events, inst, _ = sampled(cls, 100, lambda s: s.emit_columns(columns, list(range(300)), stream="side"))
    assert [(e["id"], e["values"], e["stream"]) for e in events] == [(n, [f"k{n}", n], "side") for n in range(300)]
    assert inst.emit_count == 300
    events, _, _ = sampled(cls, 10, lambda s: [s.emit_columns([[f"k{n}" for n in range(k, k + 100)],
                                                              list(range(k, k + 100))]) for k in range(0, 20000, 100)])
    assert 1800 <= len(events) <= 2200
    assert all(e["values"] == [f"k{e['values'][1]}", e["values"][1]] for e in events)


def test_off_puts_the_class_s_own_methods_back_and_emits_still_go_out():
    spout = Src()
    inst, sinks = instance(build(Grouping.GLOBAL, par=1), spout)
    cls = type(spout)
    own = dict(cls.__dict__)
    events = EventsLog("unused")
    sampler = Sampler(inst, events)
    sampler.set_percent(100)
    sampler.set_percent(50)  # changed while on: wraps the class's own, not the wrapper
    assert cls.__dict__["emit"] is not own["emit"]
    spout.emit(["a", 1])
    sampler.set_percent(0)
    assert all(cls.__dict__[name] is own[name] for name in ("emit", "emit_many", "emit_columns"))
    spout.emit(["b", 2])
    assert frames(inst) == {sinks[0]: [["default", [["a", 1], ["b", 2]]]]}


def test_events_keep_what_json_cannot_hold_as_its_repr(tmp_path):
    line = json.loads(event_line("c", 3, "s", ("id", 1), [1.5, {1, 2}, float("nan"), b"x"], 2.0))
    assert line["values"] == [1.5, "{1, 2}", "nan", "b'x'"] and line["id"] == ["id", 1]
    log = EventsLog(str(tmp_path / "events.log"))
    log.add('{"a": 1}')
    log.add('{"b": 2}')
    log.flush()
    log.flush()
    assert (tmp_path / "events.log").read_text() == '{"a": 1}\n{"b": 2}\n'


def test_skips_are_geometric():
    random.seed(3)
    draws = [skips(25.0)() for _ in range(40000)]
    assert min(draws) == 1 and abs(sum(draws) / len(draws) - 4.0) < 0.1
    assert skips(100.0)() == 1


def test_levels_are_set_and_each_logger_gets_its_own_back():
    keeper = LevelKeeper()
    logger = logging.getLogger("squall.test.keeper")
    logger.setLevel(logging.WARNING)
    keeper.apply({"squall.test.keeper": "DEBUG", "root": "ERROR"})
    root_before = keeper.before["root"]
    assert logger.level == logging.DEBUG and logging.getLogger().level == logging.ERROR
    keeper.apply({"squall.test.keeper": "INFO"})
    assert logger.level == logging.INFO and logging.getLogger().level == root_before
    keeper.apply({})
    assert logger.level == logging.WARNING and keeper.applied == {}


@pytest.fixture(params=["local", "zookeeper"])
def state_manager(request, tmp_path):
    if request.param == "local":
        return LocalStateManager(str(tmp_path), poll_interval=0.05)
    return ZooKeeperStateManager(request.getfixturevalue("zookeeper").hosts, f"/squall-{uuid.uuid4().hex[:8]}",
                                 session_timeout=2.0, auth="squall:test-credential")


def test_a_process_applies_the_record_and_reverts_on_expiry(state_manager):
    name = "dbg"
    logger = logging.getLogger("squall.test.settings")
    with state_manager as state:
        now = [1000.0]
        # set before the process starts: it reads the record at start (a restarted process takes it again)
        state.put(Kind.DEBUG, name, debugging.set_levels(None, [LevelRequest("squall.test.settings", "DEBUG", 60)],
                                                         "count", now[0]))
        seen = []
        settings = DebugSettings(state, name, ["count"], seen.append, clock=lambda: now[0]).start()
        try:
            assert logger.level == logging.DEBUG and seen == [{"count": 0.0}]
            state.put(Kind.DEBUG, name, debugging.set_sampling(state.get(Kind.DEBUG, name), 5, None, 0.3, now[0]))
            wait_until(lambda: seen[-1] == {"count": 5.0}, timeout=5, what="sampling applied")
            now[0] += 0.3  # the sampling's expiry passes: the timer set for it applies the record again
            wait_until(lambda: seen[-1] == {"count": 0.0}, timeout=5, what="sampling expired")
            assert logger.level == logging.DEBUG
            state.delete(Kind.DEBUG, name)
            wait_until(lambda: logger.level == logging.NOTSET, timeout=5, what="the level reverted")
        finally:
            settings.close()
        other = DebugSettings(state, name, ["split"]).start()  # another component: not its level
        other.close()
        assert logger.level == logging.NOTSET


@pytest.mark.parametrize("many", [False, True], ids=["emit", "emit_many"])
def test_a_chain_member_s_emits_handed_on_by_call_are_sampled(many):
    from test_chain import MID, OUT, SRC, Mid, Out, Src, make, plan_frame, topology

    from squall.runtime.instance.chain import Chain

    topo = topology()
    src, out = Src([f"w{n}" for n in range(50)], ids=False, many=many), Out()
    head = make(topo, "a_src", SRC, src, chained_to=MID)
    mid = make(topo, "b_mid", MID, Mid(), chained_to=OUT)
    chain = Chain([head, mid, make(topo, "c_out", OUT, out)])
    events = EventsLog("unused")
    for member in (head, mid):
        Sampler(member, events).set_percent(100)
    chain.on_frame(plan_frame(), 0.0)
    while src.todo:
        chain.spout_burst()
    lines = [json.loads(line) for line in events.lines]
    assert [(e["component"], e["values"]) for e in lines if e["component"] == "a_src"] == [
        ("a_src", [f"w{n}"]) for n in range(50)]
    assert [e["values"] for e in lines if e["component"] == "b_mid"] == [[f"W{n}"] for n in range(50)]
    assert len(out.seen) == 50  # delivered by call, as without sampling


def test_topology_debug_samples_every_emit_until_the_record_says_otherwise(tmp_path):
    from types import SimpleNamespace

    from squall.runtime.instance.loop import _debug_settings

    spout = Src()
    inst, _ = instance(build(Grouping.SHUFFLE, par=2), spout)
    events = EventsLog("unused")
    own = type(spout).__dict__["emit"]
    with LocalStateManager(str(tmp_path), poll_interval=0.05) as state:
        env = SimpleNamespace(state=state, name="dbg", config={"topology.debug": True})
        settings = _debug_settings(env, inst, events).start()
        try:
            spout.emit(["a", 1])
            state.put(Kind.DEBUG, "dbg", debugging.set_sampling(None, 0, "src", None, 0.0))
            wait_until(lambda: type(spout).__dict__["emit"] is own, timeout=5, what="sampling off: the own emit back")
            spout.emit(["b", 2])
        finally:
            settings.close()
    assert [json.loads(line)["values"] for line in events.lines] == [["a", 1]]
