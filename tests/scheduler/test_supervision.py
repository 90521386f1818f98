"""The one restart policy and the one supervision model, without processes or clocks."""
from squall.supervision import RestartBudget, RestartPolicy, Start, Supervision

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


def test_a_budget_carried_over_counts_on():
    budget = RestartBudget(POLICY, RestartBudget(POLICY, [0.0, 1.0, 2.0]).times())
    assert budget.on_exit(3.0) is None


class Model:
    """The model with the shell's side played by hand: started processes are numbers."""

    def __init__(self, **kw):
        self.s = Supervision(POLICY, grace=5.0, **kw)
        self.pids = iter(range(100, 10_000))

    def step(self, now):
        """Carry out what is due; the actions as (kind, name)."""
        out = []
        for action in self.s.actions(now):
            if isinstance(action, Start):
                self.s.started(action.unit, next(self.pids), now)
            out.append((type(action).__name__, action.unit.name))
        return out


def test_wanted_names_are_started_once():
    m = Model()
    m.s.want(["a", "b"], now=0.0)
    assert m.step(0.0) == [("Start", "a"), ("Start", "b")]
    assert m.step(1.0) == []
    assert m.s.units["a"].running and m.s.units["b"].running


def test_a_dead_process_is_restarted_after_its_backoff():
    m = Model()
    m.s.want(["a"], now=0.0)
    m.step(0.0)
    a = m.s.units["a"]
    m.s.exited(a, -9, now=10.0)
    assert not a.running and a.crashes == 1 and a.last_exit == -9
    assert m.step(10.5) == [], "restarted before its backoff (1s)"
    assert m.step(11.0) == [("Start", "a")]
    m.s.exited(a, 1, now=12.0)
    assert m.step(13.0) == [] and m.step(14.0) == [("Start", "a")], "the second backoff is 2s"


def test_past_its_budget_it_fails_with_the_reason_and_is_never_started_again():
    m = Model()
    m.s.want(["b", "a"], now=0.0)
    m.step(0.0)
    now = 0.0
    for _ in range(4):  # the fourth death within the window is past the budget of 3
        m.s.exited(m.s.units["a"], 1, now)
        now += 5.0
        m.step(now)
    a = m.s.units["a"]
    assert a.failure == "a exited with 1, past its restart budget (3 restarts within 60s)"
    assert m.s.failure == a.failure
    assert m.step(1000.0) == [] and not a.running


def test_a_clean_exit_is_a_free_restart_only_when_asked():
    free = Model(free_clean_exit=True)
    free.s.want(["a"], 0.0)
    free.step(0.0)
    for _ in range(10):
        free.s.exited(free.s.units["a"], 0, 1.0)
        assert free.step(1.0) == [("Start", "a")]
    assert free.s.units["a"].budget.restarts(1.0) == 0 and free.s.units["a"].failure is None
    counted = Model()
    counted.s.want(["a"], 0.0)
    counted.step(0.0)
    counted.s.exited(counted.s.units["a"], 0, 1.0)
    assert counted.s.units["a"].budget.restarts(1.0) == 1


def test_a_plan_change_stops_only_the_difference():
    m = Model()
    m.s.want(["a", "b", "c"], 0.0)
    m.step(0.0)
    b = m.s.units["b"]
    left = m.s.want(["a", "c", "d"], 1.0)
    assert [u.name for u in left] == ["b"]
    assert m.step(1.0) == [("Start", "d")], "b stops only when the shell says (retire)"
    m.s.retire(b, stop_at=3.0, label="plan-2")
    assert m.step(2.0) == []
    assert m.step(3.0) == [("Terminate", "b")]
    m.s.exited(b, 0, 3.5)
    assert m.s.leaving == [] and "b" not in m.s.units and m.step(10.0) == [], "a leaver is not restarted"
    assert [n for n, u in sorted(m.s.units.items()) if u.running] == ["a", "c", "d"]


def test_retire_brings_the_stop_forward_never_back():
    m = Model()
    m.s.want(["a"], 0.0)
    m.step(0.0)
    (a,) = m.s.want([], 1.0)
    m.s.retire(a, 60.0, label="p")
    m.s.retire(a, 5.0)
    m.s.retire(a, 30.0)
    assert a.stop_at == 5.0 and a.label == "p"


def test_past_the_stop_deadline_sigterm_then_sigkill_after_the_grace():
    m = Model()
    m.s.want(["a"], 0.0)
    m.step(0.0)
    (a,) = m.s.want([], 1.0)
    m.s.retire(a, 1.0)
    assert m.step(1.0) == [("Terminate", "a")]
    assert m.step(5.9) == [], "killed before the grace period (5s) ran out"
    assert m.step(6.0) == [("Kill", "a")]
    assert m.step(7.0) == [], "SIGKILL is given once"
    m.s.exited(a, -9, 7.5)
    assert m.s.running() == []


def test_a_leaver_wanted_again_keeps_its_process():
    m = Model()
    m.s.want(["a"], 0.0)
    m.step(0.0)
    (a,) = m.s.want([], 1.0)
    m.s.retire(a, 10.0)
    m.s.want(["a"], 2.0)
    assert m.s.units["a"] is a and a.running and not a.leaving
    assert m.step(20.0) == [], "neither stopped nor started twice"


def test_an_adopted_process_is_not_started_twice_and_an_unknown_exit_counts():
    m = Model()
    m.s.want(["a"], 0.0)
    m.s.started(m.s.units["a"], 4242, 0.0)  # found running (a restarted supervisor resuming)
    assert m.step(0.0) == []
    m.s.exited(m.s.units["a"], None, 1.0)
    assert m.s.units["a"].budget.restarts(1.0) == 1
    assert m.step(2.0) == [("Start", "a")]
