"""Hot keys from sampled emits (pure): counted on the fields-grouped streams into the component, each sent
to the task the runtime's own route picks, into a plain and into a stateful bolt."""
from __future__ import annotations

import pytest
from stateful_components import Count, PlainSource, Sink

from squall import Grouping, TopologyBuilder
from squall.health.hot_keys import (KEYS_FRESH_SECS, LAG_SECS, KeySampler, hot_keys, keyed_inputs,
                                    sample_percent)
from squall.logical import component_config, task_ids
from squall.runtime.routing import build_routes


def topology(bolt: type):
    builder = TopologyBuilder("keys")
    words = builder.add_spout("words", PlainSource, par=2)
    other = builder.add_spout("other", PlainSource)
    builder.add_bolt("count", bolt, par=4, inputs={words: Grouping.fields("word"), other: Grouping.SHUFFLE})
    return builder.build().plan


def event(component: str, word: object, stream: str = "default") -> dict:
    return {"time": 1.0, "component": component, "task": 1, "stream": stream, "id": None, "values": [word]}


@pytest.mark.parametrize("bolt", [Sink, Count], ids=["plain", "stateful"])
def test_the_hot_keys_are_counted_on_the_keyed_inputs_and_sent_where_the_route_sends_them(bolt) -> None:
    plan = topology(bolt)
    inputs = keyed_inputs(plan, "count")
    assert [(i.upstream, i.stream, i.key_index) for i in inputs] == [("words", "default", (0,))]
    events = ([event("words", "the")] * 60 + [event("words", "a")] * 25 + [event("words", w) for w in "bcdefg"]
              + [event("other", "the")] * 100 + [event("words", "the", stream="side")] * 100)
    tasks = task_ids(plan)
    groups = component_config(plan, "count")["squall.state.key.groups"] if bolt is Count else None
    found = hot_keys(events, inputs, tasks["count"], groups)
    route = build_routes(plan, "words", tasks, {t: 1 for ts in tasks.values() for t in ts}, 1)["default"]
    assert [(k["key"], k["share"]) for k in found] == [("the", 0.659), ("a", 0.275), ("b", 0.011),
                                                      ("c", 0.011), ("d", 0.011)]
    assert [k["task"] for k in found] == [route.targets([k["key"]], None)[0] for k in found]


def test_the_percent_aims_at_a_sample_of_two_thousand_within_bounds() -> None:
    assert sample_percent(1000.0, 20.0) == 10.0  # 1,000/s × 20 s: 10 % gives 2,000
    assert sample_percent(5000.0, 20.0) == 2.0
    assert sample_percent(100_000.0, 20.0) == 0.1
    assert sample_percent(0.0, 20.0) == 10.0


SAMPLE_SECS = 20.0


def test_a_component_is_sampled_once_until_its_keys_are_stale() -> None:
    sampler = KeySampler()
    assert sampler.wanted(["count"], 0.0) == ["count"]
    sampler.start("count", [], 0.0, SAMPLE_SECS)
    assert sampler.wanted(["count"], 1.0) == [] and sampler.due(SAMPLE_SECS + LAG_SECS - 1) == []
    assert [s.component for s in sampler.due(SAMPLE_SECS + LAG_SECS)] == ["count"]
    sampler.keep("count", [{"key": "the", "share": 1.0, "task": 3}], SAMPLE_SECS)
    assert sampler.keys(SAMPLE_SECS + 1)["count"][0]["key"] == "the"
    assert sampler.wanted(["count"], SAMPLE_SECS + 1) == []
    assert sampler.wanted(["count"], SAMPLE_SECS + KEYS_FRESH_SECS + 1) == ["count"]
