"""The health manager's rules (pure: control and observations in, the decision to carry out out), its
records in a real state manager (local directory and ZooKeeper), and its one acting copy."""
import json
import uuid
from dataclasses import replace

import pytest

from squall.errors import SquallError
from squall.health.actuate import update_of
from squall.health.manager import HealthManager, Leadership, symptoms
from squall.health.model import Action, ComponentObservation, Decision, Observation, TaskObservation
from squall.health.store import Control, HealthStore, Report
from squall.metrics_schema import HEALTH_ACTIONS
from squall.scheduler.changes import TopologyUpdate
from squall.scheduler.manager import set_max_spout_pending
from squall.state import LocalStateManager
from squall.state.zookeeper import ZooKeeperStateManager

AUTH = "squall:test-credential"


def observation(time=100.0, rate=900.0, busy=0.98):
    task = TaskObservation(task_id=1, container=1, execute_rate=rate, emit_rate=0.0, busy=busy, queue_depth=40,
                           queue_depth_max=80, backpressure_ms=1200.0, execute_latency_ms=1.1, cpu_percent=20.0,
                           rss_mb=40.0)
    bolt = ComponentObservation(name="sink", kind="bolt", parallelism=1, cpu_requested=1.0, ram_mb_requested=256,
                                chain=None, tasks={1: task})
    return Observation(time=time, window_secs=10.0, topology="t", status="running", busy_elsewhere=False,
                       reliability="ATLEAST_ONCE", max_spout_pending=1000, containers=1, components={"sink": bolt})


def decision(n, kind="scale", status="recommended"):
    return Decision(id=f"d{n}", time=100.0 + n, diagnosis="under_provisioned", component="sink",
                    summary=f"scale sink to {n + 1}", evidence={"parallelism": 1, "busy": 0.98},
                    formula="ceil(3000 / 900 / 0.8)", action=Action(kind, component="sink", parallelism=n + 1),
                    expected={"input_rate": 3000}, status=status)


class ScriptedPolicy:
    """The policy's interface with its decisions given in advance, one list per ``decide`` (the real
    policy's rules are tested in tests/health/test_policy*)."""

    def __init__(self, *rounds):
        self.rounds = list(rounds)
        self.asked = 0
        self.diagnosed = []

    def decide(self, obs):
        self.asked += 1
        return self.rounds.pop(0) if self.rounds else []

    def applied(self, d, now):
        return replace(d, status="applied", time=now)


def test_auto_carries_out_the_first_recommendation_that_changes_something():
    report_only = replace(decision(0, kind="none"), id="skew")
    health = HealthManager(ScriptedPolicy([report_only, decision(1), decision(2)]), "auto")
    chosen = health.step(Control(), observation())
    assert chosen.id == "d1"
    health.carried_out(chosen, 200.0)
    assert [(d.id, d.status) for d in health.report(200.0).history] == [
        ("skew", "recommended"), ("d2", "recommended"), ("d1", "applied")]


def test_recommend_changes_nothing_until_an_operator_asks_and_then_once():
    health = HealthManager(ScriptedPolicy([decision(1)], [], []), "recommend")
    assert health.step(Control(), observation()) is None
    assert health.report(1.0).history[0].status == "recommended"
    assert health.step(Control(apply="d1"), observation()).id == "d1"
    health.carried_out(decision(1), 2.0)
    assert health.step(Control(apply="d1"), observation()) is None  # asked once, applied once


def test_a_refused_action_is_recorded_as_failed_with_the_message():
    health = HealthManager(ScriptedPolicy([decision(1)]), "auto")
    health.refused(health.step(Control(), observation()), "topology 't' is being changed by another command")
    (d,) = health.report(1.0).history
    assert (d.status, d.reason) == ("failed", "topology 't' is being changed by another command")


def test_off_does_not_even_ask_the_policy_and_the_operators_mode_wins_over_the_config():
    policy = ScriptedPolicy([decision(1)])
    health = HealthManager(policy, "auto")
    assert health.step(Control(mode="off"), observation()) is None
    assert (policy.asked, health.mode) == (0, "off")
    assert health.step(Control(mode="recommend"), observation()) is None
    assert (policy.asked, health.mode) == (1, "recommend")


def test_the_history_given_back_is_kept_and_extended_and_parallelism_recorded_when_it_changes():
    old = decision(0, status="effective")
    health = HealthManager(ScriptedPolicy([decision(1)]), "recommend", history=[old],
                           parallelism=[(50.0, {"sink": 1})])
    health.step(Control(), observation(time=100.0))
    assert [d.id for d in health.report(1.0).history] == ["d0", "d1"]
    assert health.report(1.0).parallelism == ((50.0, {"sink": 1}),)
    scaled = observation(time=110.0)
    scaled = replace(scaled, components={"sink": replace(scaled.components["sink"], parallelism=3)})
    health.step(Control(), scaled)
    assert health.report(1.0).parallelism == ((50.0, {"sink": 1}), (110.0, {"sink": 3}))


def test_symptoms_name_the_figures_an_operator_reads_first():
    s = symptoms(observation())["sink"]
    assert (s["parallelism"], s["execute_rate"], s["busy_max"], s["queue_depth_max"], s["backpressure_ms"]) == (
        1, 900.0, 0.98, 80, 1200.0)


@pytest.fixture(params=["local", "zookeeper"])
def make_state(request, tmp_path):
    root = f"/squall-{uuid.uuid4().hex[:8]}"
    made = []

    def make():
        if request.param == "local":
            s = LocalStateManager(str(tmp_path / "state"), poll_interval=0.05)
        else:
            s = ZooKeeperStateManager(request.getfixturevalue("zookeeper").hosts, root, session_timeout=2.0,
                                      auth=AUTH)
        s.start()
        made.append(s)
        return s

    yield make
    for s in made:
        s.close()


def test_the_records_survive_a_new_manager_and_keep_the_operators_and_the_managers_apart(make_state):
    store = HealthStore(make_state(), "t")
    assert (store.control(), store.report()) == (Control(), Report())
    store.set_mode("auto")
    store.save(Report(5.0, "auto", symptoms(observation()), (decision(1), decision(2, status="failed")),
                      ((1.0, {"sink": 1}),)))
    store.request_apply("d1")
    again = HealthStore(make_state(), "t")
    assert again.control() == Control("auto", "d1")
    assert again.report() == Report(5.0, "auto", symptoms(observation()), (decision(1), decision(2, status="failed")),
                                    ((1.0, {"sink": 1}),))
    assert again.report().pending().id == "d1"


def test_a_bogus_mode_is_refused_naming_the_modes_and_nothing_is_written(make_state):
    store = HealthStore(make_state(), "t")
    with pytest.raises(SquallError, match=r"--mode 'bogus': expected one of off, recommend, auto"):
        store.set_mode("bogus")
    assert store.control() == Control()


def test_one_copy_acts_the_other_waits_until_it_is_gone(make_state):
    first, second = make_state(), make_state()
    a, b = Leadership(first, "t"), Leadership(second, "t")
    assert a.holds() and a.holds()
    assert not b.holds()
    a.release()
    assert b.holds() and not a.holds()


def test_the_metrics_row_counts_the_decisions_that_reached_each_status_since_the_last_one():
    health = HealthManager(ScriptedPolicy([decision(1), decision(2)]), "auto")
    health.carried_out(health.step(Control(), observation()), 5.0)
    row = health.metrics_row(6.0, 1.0, container=0)
    assert (row.process, row.container, row.task_id) == ("health", 0, None)
    assert json.loads(row.user) == {HEALTH_ACTIONS: {"scale/recommended": 2, "scale/applied": 1}}
    assert json.loads(health.metrics_row(7.0, 1.0, container=0).user) == {HEALTH_ACTIONS: {}}


def test_a_live_max_spout_pending_must_be_a_positive_integer(tmp_path):
    with pytest.raises(SquallError, match=r"^topology.max.spout.pending 0: must be a positive integer$"):
        set_max_spout_pending(LocalStateManager(str(tmp_path)), "t", 0)


def test_a_scale_that_carries_sizes_is_one_update_with_both():
    change = update_of(Action("scale", component="sink", parallelism=3, cpu=0.25, ram_mb=96.4))
    assert change == TopologyUpdate(parallelism={"sink": 3}, component_config={
        "sink": {"squall.component.cpu": 0.25, "squall.component.ram.mb": 96}})
    assert update_of(Action("scale", component="sink", parallelism=2)) == TopologyUpdate(parallelism={"sink": 2})
    with pytest.raises(SquallError, match="action 'set_pending' is not an update"):
        update_of(Action("set_pending", component="sink", pending=10))
