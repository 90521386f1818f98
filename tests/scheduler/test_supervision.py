"""The one restart policy, and the supervisor's rules, without processes or clocks."""
import pytest

from squall.scheduler.supervisor import ContainerSupervisor
from squall.supervision import RestartBudget, RestartPolicy

POLICY = RestartPolicy(max_restarts=3, window=60.0, backoff=1.0, backoff_max=3.0)


def test_backoff_doubles_up_to_its_cap_and_the_budget_runs_out():
    budget = RestartBudget(POLICY)
    assert [budget.on_exit(t) for t in (0.0, 1.0, 2.0)] == [1.0, 2.0, 3.0]
    assert budget.restarts(2.0) == 3
    assert budget.on_exit(3.0) is None  # a fourth death within 60 s: past the budget


def test_the_window_slides_so_rare_crashes_are_restarted_for_ever():
    budget = RestartBudget(POLICY)
    for hour in range(100):  # one crash an hour for 100 hours
        assert budget.on_exit(hour * 3600.0) == 1.0
    assert budget.restarts(100 * 3600.0) == 0
    # three quick deaths, then a quiet minute: the budget is whole again
    budget = RestartBudget(POLICY)
    for t in (0.0, 1.0, 2.0):
        budget.on_exit(t)
    assert budget.on_exit(62.5) == 1.0


class FakeProcess:
    pids = iter(range(100, 10_000))

    def __init__(self):
        self.pid = next(self.pids)
        self.returncode = None

    def poll(self):
        return self.returncode


@pytest.fixture
def rules(tmp_path):
    log = tmp_path / "executor.log"
    log.write_text("line 1\nTraceback: planted\n")
    started = []

    def start(cid):
        started.append(cid)
        return FakeProcess()

    r = ContainerSupervisor(POLICY, start, lambda cid: str(log), retire_wait=10.0)
    r.started = started
    return r


def test_a_crashed_executor_is_restarted_after_its_backoff_then_given_up(rules):
    assert rules.want([0, 1, 2], now=0.0)
    assert rules.started == [0, 1, 2]
    first = rules.containers[1].popen
    first.returncode = -9
    changed, _ = rules.poll(now=1.0)
    assert changed and rules.containers[1].popen is None
    rules.poll(now=1.5)
    assert rules.started == [0, 1, 2], "restarted before its backoff"
    rules.poll(now=2.0)
    assert rules.started == [0, 1, 2, 1]
    now = 2.0
    for _ in range(3):  # crashes 2, 3, 4: the last one is past the budget of 3
        rules.containers[1].popen.returncode = 1
        rules.poll(now)
        now += 10.0
        rules.poll(now)
    assert rules.containers[1].failure is not None and rules.failure == rules.containers[1].failure
    assert "container 1: its executor exited with 1, past its restart budget (3 restarts within 60s)" \
        in rules.failure
    assert "Traceback: planted" in rules.failure
    assert rules.pids().keys() == {0, 2}


def test_a_clean_exit_is_a_requested_restart(rules):
    rules.want([0, 1], now=0.0)
    for _ in range(10):  # squall restart, many times: never counted against the budget
        rules.containers[1].popen.returncode = 0
        rules.poll(now=5.0)
    assert rules.containers[1].failure is None and rules.containers[1].budget.restarts(5.0) == 0
    assert rules.started.count(1) == 11


def test_removed_containers_retire_and_new_ones_start(rules):
    rules.want([0, 1, 2], now=0.0)
    rules.want([0, 1, 3], now=1.0)
    assert rules.started == [0, 1, 2, 3]
    retiring = rules.containers[2].popen
    _, overdue = rules.poll(now=5.0)
    assert overdue == []
    _, overdue = rules.poll(now=11.0)
    assert [c.id for c in overdue] == [2], "a retired executor still running past retire_wait is stopped"
    retiring.returncode = 0
    rules.poll(now=11.5)
    assert 2 not in rules.containers and rules.started == [0, 1, 2, 3], "a retired executor was restarted"
