"""The pending tuner in a closed loop: a spout with ``pending`` tuples in flight in front of one bolt,
solved by mean value analysis (a delay of ``network_ms`` for the rest of the tree, one queue of
``service_ms`` a tuple); p99 is the mean latency times a fixed tail factor."""
from __future__ import annotations

from dataclasses import dataclass

import pytest

from brain_helpers import component, observation, settings, task

from squall.health.policy import HealthPolicy
from squall.health.tuner import pending_cap

TAIL = 1.3  # p99 / mean complete latency


@dataclass
class ClosedLoop:
    pending: int
    service_ms: float
    network_ms: float = 5.0
    offered: float = float("inf")  # tuples/s the spout has to give (a paced source)

    def solve(self) -> tuple:
        """``(throughput tuples/s, mean complete latency ms)`` with ``pending`` tuples in flight (exact MVA)."""
        queue = 0.0
        throughput = latency = 0.0
        for n in range(1, self.pending + 1):
            residence = self.service_ms * (1.0 + queue)
            latency = self.network_ms + residence
            throughput = n / latency
            queue = throughput * residence
        return min(self.offered, 1000.0 * throughput), latency

    def observe(self, time: float):
        rate, latency = self.solve()
        busy = min(1.0, rate * self.service_ms / 1000.0)
        # no cpu or memory figures: nothing to right-size, the tuner alone acts
        spout = component("spout", [task(1, rate, 0.05, spout=True, rss_mb=None)], kind="spout",
                          complete_latency_p99_ms=TAIL * latency)
        bolt = component("bolt", [task(10, rate, busy, service_ms=self.service_ms, rss_mb=None)])
        return observation(time, [spout, bolt], reliability="ATLEAST_ONCE", pending=self.pending)


def run(loop: ClosedLoop, policy: HealthPolicy, times: range, service_ms) -> list:
    """Observe every 10 s and apply each set_pending; ``(time, p99 ms, throughput)``."""
    trace = []
    for t in times:
        loop.service_ms = service_ms(t)
        observed = loop.observe(float(t))
        for d in policy.decide(observed):
            if d.status == "recommended" and d.action.kind == "set_pending":
                policy.applied(d, float(t))
                loop.pending = d.action.pending
        trace.append((t, observed.components["spout"].complete_latency_p99_ms, observed.components["spout"]))
    return trace


def test_pending_holds_the_p99_target_as_the_service_time_doubles() -> None:
    target = 200.0
    loop = ClosedLoop(pending=1000, service_ms=2.0)
    # pending binds: the bolt is saturated, held at one task here to see the tuner alone
    policy = HealthPolicy(settings(latency_target_ms=target, max_parallelism={"bolt": 1}))
    trace = run(loop, policy, range(0, 900, 10), lambda t: 2.0 if t < 400 else 4.0)
    p99 = dict((t, latency) for t, latency, _ in trace)
    assert p99[0] > 10 * target  # 1,000 in flight: 2.6 s
    settled = [p99[t] for t in range(300, 400, 10)] + [p99[t] for t in range(600, 900, 10)]
    assert all(abs(x - target) <= 0.2 * target for x in settled), settled
    assert p99[400] > 1.5 * target  # the service time doubled: so did the latency, until the tuner followed
    tuned = [d for d in policy.history if d.action.kind == "set_pending"]
    assert [d.status for d in policy.history if d not in tuned] == ["blocked"]  # the scale-up, said once
    assert len(tuned) <= 6 and all(d.status == "effective" for d in tuned)


def test_the_memory_cap_bounds_pending() -> None:
    loop = ClosedLoop(pending=10, service_ms=2.0)
    policy = HealthPolicy(settings(latency_target_ms=1000.0, pending_memory_mb=0.05, max_parallelism={"bolt": 1}))
    assert pending_cap(loop.observe(0.0), policy._settings) == 51
    run(loop, policy, range(0, 300, 10), lambda t: 2.0)
    assert loop.pending == 51  # 1 KiB a pending tuple: 51 in 0.05 MiB, though the target would take more


def test_without_a_target_pending_climbs_while_throughput_rises_then_steps_back() -> None:
    """A paced spout offering 300 tuples/s (the bolt 60 % busy then): 16 in flight carry it (16 / 52 ms =
    308/s); the doubling to 32 gains nothing and is stepped back."""
    loop = ClosedLoop(pending=2, service_ms=2.0, network_ms=50.0, offered=300.0)
    policy = HealthPolicy(settings(max_parallelism={"bolt": 1}, blacklist_secs=600.0))
    run(loop, policy, range(0, 700, 10), lambda t: 2.0)  # it holds at the top for 600 s, then probes again
    steps = [(d.diagnosis, d.action.pending, d.status) for d in policy.history if d.action.kind == "set_pending"]
    assert steps == [("pending", 4, "effective"), ("pending", 8, "effective"), ("pending", 16, "effective"),
                     ("pending", 32, "ineffective"), ("pending_revert", 16, "effective")]
    assert loop.pending == 16


def test_pending_stops_climbing_once_the_bolt_is_the_limit() -> None:
    """Unpaced, the bolt saturates near (50 + 2) / 2 = 26 in flight: the climb stops when it is busy past
    the target utilization, with no probe beyond it to step back from."""
    loop = ClosedLoop(pending=2, service_ms=2.0, network_ms=50.0)
    policy = HealthPolicy(settings(max_parallelism={"bolt": 1}, blacklist_secs=600.0))
    run(loop, policy, range(0, 300, 10), lambda t: 2.0)
    steps = [(d.action.pending, d.status) for d in policy.history if d.action.kind == "set_pending"]
    assert steps == [(4, "effective"), (8, "effective"), (16, "effective"), (32, "effective")]


@pytest.mark.parametrize("busy, p99_ms, rates, open_trees, climbs", [
    (0.3, 400.0, (400, 400, 400), None, True),  # 400/s × 0.4 s = 160 trees in flight of 100 allowed: it binds
    (0.8, 400.0, (400, 400, 400), None, False),  # the bolt at 80 % busy (target 70 %) is the limit: more would queue
    (0.3, 20.0, (400, 400, 400), None, False),  # 400/s × 0.02 s = 8 trees in flight of 100: it holds nothing back
    (0.3, 400.0, (520, 460, 400), None, False),  # catching up on a backlog, not steady: a probe would be credited
    (0.3, 400.0, (400, 400, 400), 40, False),  # measured: 40 trees open of 100 (a paced spout), whatever p99 says
    (0.3, 20.0, (400, 400, 400), 95, True),  # measured: 95 open of 100, pending holds the spout
])
def test_pending_climbs_only_while_it_binds_no_bolt_is_near_its_capacity_and_the_rate_is_steady(
        busy, p99_ms, rates, open_trees, climbs) -> None:
    policy = HealthPolicy(settings(max_parallelism={"bolt": 1}))
    decided = []
    for t, rate in enumerate(rates):
        spout = component("spout", [task(1, rate, 0.05, spout=True, rss_mb=None, open_trees=open_trees)],
                          kind="spout", complete_latency_p99_ms=p99_ms)
        bolt = component("bolt", [task(10, rate, busy, service_ms=2.0, rss_mb=None)])
        decided = policy.decide(observation(10.0 * t, [spout, bolt], reliability="ATLEAST_ONCE", pending=100))
        if t < len(rates) - 1:
            assert not [d for d in decided if d.action.kind == "set_pending"]  # not yet three observations
    assert [d.action.pending for d in decided if d.action.kind == "set_pending"] == ([200] if climbs else [])
