"""The application driver's restart rules, without processes: container exits against the restart policy."""
from squall.supervision import RestartPolicy
from squall.yarn.driver import ContainerWatch


def policy(max_restarts=2):
    return RestartPolicy(max_restarts=max_restarts, window=60.0, backoff=0.0, backoff_max=0.0)


def test_a_new_holder_is_an_exit_even_without_a_gap():
    watch = ContainerWatch(policy())
    assert watch.observe({0: ("n1", 10), 1: ("n1", 11)}, {0, 1}, now=0) is None
    assert watch.observe({0: ("n1", 10), 1: ("n2", 20)}, {0, 1}, now=1) is None  # relaunched on n2
    assert watch.restarts(1, 1) == 1 and watch.restarts(0, 1) == 0


def test_past_the_budget_fails_naming_the_container():
    watch = ContainerWatch(policy(max_restarts=1))
    watch.observe({1: ("n1", 1)}, {1}, now=0)
    assert watch.observe({}, {1}, now=1) is None  # gone: one exit
    watch.observe({1: ("n1", 2)}, {1}, now=2)  # back: not another exit
    failure = watch.observe({1: ("n1", 3)}, {1}, now=3)
    assert failure and failure.startswith("container 1 exited 2 times within 60s, past its restart budget")


def test_containers_that_left_the_plan_do_not_count():
    watch = ContainerWatch(policy(max_restarts=0))
    watch.observe({1: ("n1", 1), 2: ("n1", 2)}, {1, 2}, now=0)
    assert watch.observe({1: ("n1", 1)}, {1}, now=1) is None  # container 2 retired by an update
