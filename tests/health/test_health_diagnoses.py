"""Each diagnosis from observations (pure): what it finds, and what it must not mistake it for."""
from __future__ import annotations

from dataclasses import replace

from brain_helpers import Pipeline, component, observation, settings, task

from squall.health.diagnose import diagnose
from squall.health.resolve import measure, resolve


def names(found: list) -> list:
    return [(d.name, d.component) for d in found]


def test_a_saturated_bolt_behind_backpressure_is_under_provisioned_for_the_offered_rate() -> None:
    obs = Pipeline(offered=3000, parallelism=2).observe(100.0)
    found = diagnose(obs, [], settings())
    assert names(found) == [("under_provisioned", "bolt")]
    # the spout was held back 2/3 of the window: it offered 1,000 / (1 - 2/3) = 3,000
    assert found[0].evidence["observed_rate"] == 1000.0
    assert found[0].evidence["backpressure"] == 0.667
    assert found[0].evidence["demand"] == 3000.0
    decision = resolve(found[0], obs, [], settings(), [])
    # 2 ms a tuple: 500 tuples/s an instance; sized for 70 % busy: ceil(3000 × 1/0.7 / 500) = 9
    assert decision.action.kind == "scale" and decision.action.parallelism == 9
    assert decision.expected["input_rate"] == 3000.0 and decision.expected["utilization"] == 0.667
    assert "ceil(3,000.0 × 1.43 / 500.0) = 9" in decision.formula


def test_a_growing_source_backlog_is_drained_within_the_catch_up_time() -> None:
    spout = lambda lag, rate: component("spout", [task(1, rate, 0.1, spout=True)], kind="spout",  # noqa: E731
                                        source_lag=lag)
    bolt = component("bolt", [task(10, 500.0, 0.95, service_ms=1.9, queue=100)])
    before = observation(0.0, [spout(0, 500.0), bolt])
    now = observation(60.0, [spout(12_000, 500.0), bolt])
    found = diagnose(now, [before], settings(catch_up_secs=120.0))
    # lag grew 200 records/s: 500 + 200 offered, and 12,000 behind drained in 120 s: + 100
    assert found[0].name == "under_provisioned"
    assert found[0].evidence["lag_growth_per_sec"] == 200.0
    assert found[0].evidence["demand"] == 800.0


def test_a_slow_task_is_a_slow_instance_not_under_provisioning() -> None:
    # one task sleeping 20 ms a tuple, its 3 peers 1 ms: shuffle gives each the same share, the slow one
    # saturates and holds the spout back for all of them
    obs = Pipeline(offered=400, parallelism=4, service_ms=1.0, slow={2: 20.0}).observe(10.0)
    found = diagnose(obs, [], settings())
    assert names(found) == [("slow_instance", "bolt")]
    assert found[0].task_id == 12
    assert found[0].evidence["service_ms"] == 20.0 and found[0].evidence["peers_service_ms"] == 1.0
    decision = resolve(found[0], obs, [], settings(), [])
    assert decision.action.kind == "restart_task" and decision.action.task_id == 12


def test_a_hot_key_under_fields_grouping_is_skew_with_no_scale_up() -> None:
    hot = task(11, 900.0, 0.95, queue=400, service_ms=1.05)
    peers = [task(i, 100.0, 0.1, queue=0, service_ms=1.0) for i in (12, 13, 14)]
    spout = component("spout", [task(1, 1200.0, 0.1, spout=True, backpressure_ms=3000.0)], kind="spout")
    obs = observation(10.0, [spout, component("count", [hot, *peers], grouping="FIELDS", stateful=True)])
    found = diagnose(obs, [], settings())
    assert names(found) == [("skew", "count")]
    assert found[0].evidence["hot_task"] == 11 and found[0].evidence["skew"] == 9.0
    assert found[0].evidence["hot_keys"] is None and "sampled" in str(found[0].evidence["missing"])
    decision = resolve(found[0], obs, [], settings(), [])
    assert decision.action.kind == "none" and "partial-key grouping" in decision.summary
    # once the keys are sampled (health/hot_keys.py), the report names those of the hot task
    keys = [{"key": "the", "share": 0.62, "task": 11}, {"key": "a", "share": 0.08, "task": 13}]
    sampled = diagnose(replace(obs, hot_keys={"count": keys}), [], settings())
    assert sampled[0].evidence["hot_keys"] == keys and "missing" not in sampled[0].evidence
    summary = resolve(sampled[0], obs, [], settings(), []).summary
    assert "hot keys 'the' (62% of the sample); their key groups are the hot state" in summary
    assert "'a'" not in summary


def test_the_same_rates_under_shuffle_grouping_are_not_skew() -> None:
    hot = task(11, 900.0, 0.95, queue=400, service_ms=1.05)
    peers = [task(i, 100.0, 0.1, service_ms=1.0) for i in (12, 13, 14)]
    obs = observation(10.0, [component("count", [hot, *peers], grouping="SHUFFLE")])
    assert [d.name for d in diagnose(obs, [], settings())] == ["under_provisioned"]


def test_a_saturated_chain_is_split_before_tasks_are_added() -> None:
    chain = ("parse", "count")
    parse = component("parse", [task(10, 400.0, 0.45, service_ms=1.1)], chain=chain)
    count = component("count", [task(20, 400.0, 0.5, service_ms=1.25)], chain=chain)
    found = diagnose(observation(10.0, [parse, count]), [], settings(target_utilization=0.5, band=0.1))
    # each member alone below the high mark (60 %), the chain's one thread 95 % busy
    assert names(found) == [("chain_bottleneck", "count")]
    assert found[0].evidence["chain_busy"] == 0.95 and found[0].evidence["split_at"] == "count"
    decision = resolve(found[0], observation(10.0, [parse, count]), [], settings(), [])
    assert decision.action.kind == "split_chain" and decision.action.component == "count"


def test_over_provisioned_only_after_the_whole_grace_below_the_band() -> None:
    pipe = Pipeline(offered=500, parallelism=9)
    s = settings(scale_down_grace_secs=60.0)
    early = [pipe.observe(float(t)) for t in (0, 30)]
    assert "over_provisioned" not in [d.name for d in diagnose(pipe.observe(50.0), early, s)]
    found = [d for d in diagnose(pipe.observe(70.0), early + [pipe.observe(50.0)], s) if d.component == "bolt"]
    assert names(found) == [("over_provisioned", "bolt")]
    decision = resolve(found[0], pipe.observe(70.0), early, s, [])
    # 500 tuples/s at 500 an instance, sized for 70 %: ceil(500 / 0.7 / 500) = 2
    assert decision.action.kind == "scale" and decision.action.parallelism == 2
    assert decision.cost["containers"] < 0


def held_back_fleet(time: float, lag: object, other_busy: float = 0.6) -> object:
    """The spout held back 70 % of the window though ``bolt`` is 5 % busy, its backlog reported (``lag``) or
    not (None); ``other``, a bolt beside it, ``other_busy`` busy (within the band: 0.6; 0.05: every bolt idle,
    a starved host's picture, bench/health_hundred.py)."""
    spout = component("spout", [task(1, 1000.0, 0.3, spout=True, backpressure_ms=7000.0)], kind="spout",
                      source_lag=lag)
    bolt = component("bolt", [task(10 + i, 250.0, 0.05, service_ms=0.2) for i in range(4)])
    other = component("other", [task(20, 1000.0, other_busy, service_ms=other_busy)])
    return observation(time, [spout, bolt, other])


def test_spouts_held_back_with_a_steady_reported_backlog_hide_no_demand() -> None:
    s = settings(scale_down_grace_secs=60.0)
    recent = [held_back_fleet(float(t), 400) for t in (0, 30, 50)]
    found = [d for d in diagnose(held_back_fleet(70.0, 300), recent, s) if d.component == "bolt"]
    assert names(found) == [("over_provisioned", "bolt")]
    # sized for what was emitted, the backlog drained within catch_up_secs: not 1,000 × 1 / (1 - 0.7)
    assert found[0].evidence["backpressure"] == 0.7
    assert found[0].evidence["demand"] == round(1000.0 + 400 / s.catch_up_secs, 1)  # the grace's most
    assert "the backlog did not grow" in found[0].evidence["demand_formula"]
    decision = resolve(found[0], held_back_fleet(70.0, 300), recent, s, [])
    # 0.2 ms a tuple: 5,000 tuples/s an instance; ceil(1,003.3 / 0.7 / 5,000) = 1
    assert decision.action.kind == "scale" and decision.action.parallelism == 1
    applied = replace(decision, status="applied", applied_time=70.0)
    # judged by the same rule: held back, the backlog steady -> effective; growing -> not
    after = [held_back_fleet(float(t), 300) for t in (80, 110)]
    assert measure(applied, held_back_fleet(140.0, 200), after, s)[0]
    assert "their backlog not growing" in measure(applied, held_back_fleet(140.0, 200), after, s)[1]
    assert not measure(applied, held_back_fleet(140.0, 9000), after, s)[0]


def test_spouts_held_back_by_a_bolt_near_saturation_without_a_backlog_or_with_a_growing_one_keep_it() -> None:
    s = settings(scale_down_grace_secs=60.0)
    unknown = [held_back_fleet(float(t), None) for t in (0, 30, 50)]
    assert not [d for d in diagnose(held_back_fleet(70.0, None), unknown, s) if d.component == "bolt"]
    growing = [held_back_fleet(float(t), 100 * t) for t in (0, 30, 50)]
    assert not [d for d in diagnose(held_back_fleet(70.0, 7000), growing, s) if d.component == "bolt"]


def test_spouts_held_back_while_every_bolt_idles_size_a_scale_down_for_all_it_could_hide() -> None:
    s = settings(scale_down_grace_secs=60.0)
    idle = lambda t: held_back_fleet(t, None, other_busy=0.05)  # noqa: E731
    found = [d for d in diagnose(idle(70.0), [idle(float(t)) for t in (0, 30, 50)], s) if d.component == "bolt"]
    assert names(found) == [("over_provisioned", "bolt")]
    # not capped at 4 as a scale-up's step is: 1,000 × 1 / (1 - 0.7)
    assert found[0].evidence["demand"] == 3333.3
    assert "1 / (1 - 0.70)" in found[0].evidence["demand_formula"]
    decision = resolve(found[0], idle(70.0), [idle(float(t)) for t in (0, 30, 50)], s, [])
    # ceil(3,333.3 / 0.7 / 5,000) = 1
    assert decision.action.kind == "scale" and decision.action.parallelism == 1
    applied = replace(decision, status="applied", applied_time=70.0)
    assert "no bolt near saturation" in measure(applied, idle(140.0), [idle(110.0)], s)[1]
    assert measure(applied, idle(140.0), [idle(110.0)], s)[0]
    # a bolt the scale-down saturated holds the spouts back: ineffective
    assert not measure(applied, held_back_fleet(140.0, None, other_busy=0.95), [idle(110.0)], s)[0]
    # the spouts falling behind their source there too: sized to carry its growth and drain its backlog
    behind = lambda t: held_back_fleet(t, int(100 * t), other_busy=0.05)  # noqa: E731
    found = [d for d in diagnose(behind(70.0), [behind(float(t)) for t in (0, 30, 50)], s) if d.component == "bolt"]
    assert names(found) == [("over_provisioned", "bolt")]
    # in the grace, the most at 70 s: max(1,000 / 0.3, 1,000 + 1 × 100/s) + 1 × 7,000 / 120 s
    assert found[0].evidence["demand"] == round(1000 / 0.3 + 7000 / s.catch_up_secs, 1)


def test_spouts_falling_behind_unheld_while_every_bolt_idles_size_a_scale_down_to_catch_up() -> None:
    """bench/health_hundred.py run 8: the spouts reporting their backlog on a starved host were not held
    back, yet fell behind (it grew), while every bolt was 1 % busy: nothing in the topology explains it."""
    s = settings(scale_down_grace_secs=60.0)

    def starved(time: float) -> object:
        spout = component("spout", [task(1, 1000.0, 0.3, spout=True)], kind="spout", source_lag=int(50 * time))
        bolt = component("bolt", [task(10 + i, 250.0, 0.01, service_ms=0.2) for i in range(4)])
        return observation(time, [spout, bolt])

    found = [d for d in diagnose(starved(70.0), [starved(float(t)) for t in (0, 30, 50)], s)
             if d.component == "bolt"]
    assert names(found) == [("over_provisioned", "bolt")]
    # 1,000 + 1 × 50/s growth + 1 × 3,500 / 120 s to drain
    assert found[0].evidence["demand"] == round(1000 + 50 + 3500 / s.catch_up_secs, 1)
    # a bolt near saturation explains it: no scale-down while the backlog grows
    busy_bolt = lambda t: observation(t, [*starved(t).components.values(), component(  # noqa: E731
        "other", [task(20, 1000.0, 0.6, service_ms=0.6)])])
    assert not [d for d in diagnose(busy_bolt(70.0), [busy_bolt(float(t)) for t in (0, 30, 50)], s)
                if d.component == "bolt"]


def test_a_busy_moment_inside_the_grace_keeps_the_parallelism() -> None:
    s = settings(scale_down_grace_secs=60.0)
    low = Pipeline(offered=500, parallelism=9)
    high = Pipeline(offered=3500, parallelism=9)
    recent = [low.observe(0.0), high.observe(30.0), low.observe(50.0)]
    assert not [d for d in diagnose(low.observe(70.0), recent, s) if d.component == "bolt"]
