"""A physical plan sent as a delta (runtime/plan_delta.py): applied to the plan before, it is the leader's plan
exactly; one for another version is refused; the stream manager rebuilds the plan, hands its instances the
whole of it, and asks for the whole plan (registering as holding none) when a delta does not apply."""
import random

import pytest

from squall.idl import decode, schema
from squall.runtime.plan_delta import StalePlan, apply_delta, plan_delta, same_plan, versioned
from squall.runtime.protocol import HEADER_SIZE, control_frame
from squall.runtime.stmgr_state import Connected, FramesArrived, RegisterDue, Send

from test_stmgr_state import SPOUT, TMASTER, control, make, pplan, sent


def random_plan(rng: random.Random, version: int) -> schema.PhysicalPlan:
    """Up to 30 tasks over up to 6 containers, built in the leader's order."""
    placement = {t: rng.randint(1, 6) for t in rng.sample(range(1, 60), rng.randint(1, 30))}
    plan = pplan(placement)
    plan.instances.sort(key=lambda i: (i.container, i.id.task_id))
    for i in plan.instances:
        i.pid = rng.choice([i.pid, i.pid + 1000])
    plan.status = rng.choice([schema.TopologyStatus.RUNNING, schema.TopologyStatus.PAUSED])
    plan.max_spout_pending = rng.choice([None, 10, 20])
    return versioned(plan, version)


def test_a_delta_applied_to_the_plan_before_is_the_new_plan_exactly() -> None:
    rng = random.Random(7)
    for _ in range(200):
        base, new = random_plan(rng, 41), random_plan(rng, 42)
        assert apply_delta(base, plan_delta(base, new)) == new
    unchanged = plan_delta(base, versioned(base, 43))
    assert (unchanged.instances, unchanged.stmgrs, unchanged.instances_removed) == ([], [], [])
    assert same_plan(base, versioned(base, 43)) and not same_plan(base, new)


def test_a_delta_for_another_version_is_refused() -> None:
    base = versioned(pplan({1: 1, 2: 2}), 5)
    delta = plan_delta(versioned(pplan({1: 1}), 4), versioned(pplan({1: 1, 2: 1}), 6))
    with pytest.raises(StalePlan, match="for version 4, and this stream manager holds version 5"):
        apply_delta(base, delta)


def test_the_stream_manager_rebuilds_the_plan_and_hands_its_instances_the_whole_of_it() -> None:
    sm = make()
    sm.handle(Connected(SPOUT, 0.0))
    sm.handle(Connected(TMASTER, 0.0))
    first, second = versioned(pplan({1: 1, 2: 2}), 9), versioned(pplan({1: 1, 2: 2, 3: 2}), 10)
    sm.handle(FramesArrived(TMASTER, [control_frame(physical_plan=first)], 0.0))
    out = sm.handle(FramesArrived(TMASTER, [control_frame(plan_delta=plan_delta(first, second))], 1.0))
    assert sm.pplan == second and sm.task_container == {1: 1, 2: 2, 3: 2}
    assert [control(f).physical_plan for f in sent(out, SPOUT)] == [second]
    assert sm.registration().plan_version == 10


def test_a_delta_that_does_not_apply_asks_for_the_whole_plan() -> None:
    sm = make()
    sm.handle(Connected(SPOUT, 0.0))
    sm.handle(Connected(TMASTER, 0.0))
    sm.handle(FramesArrived(TMASTER, [control_frame(physical_plan=versioned(pplan({1: 1}), 3))], 0.0))
    sm.handle(RegisterDue())  # the registration the connections scheduled
    stale = plan_delta(versioned(pplan({1: 1}), 7), versioned(pplan({1: 1, 2: 1}), 8))
    out = sm.handle(FramesArrived(TMASTER, [control_frame(plan_delta=stale)], 1.0))
    assert sm.pplan.version == 3 and sent(out, SPOUT) == []  # routes on the plan it had meanwhile
    registration = [decode(schema.Control, f[HEADER_SIZE:]).register_stmgr for f in sent(sm.handle(RegisterDue()),
                                                                                         TMASTER)]
    assert [r.plan_version for r in registration] == [None]  # holding none: the leader sends the whole plan
    assert any(type(a) is not Send for a in out)  # the registration's timer
