"""The stateful API: KeyValueState, key groups, the saved form, and what build() refuses."""

import pytest

from squall import Grouping, KeyValueState, StatefulBolt, StatefulSpout, TopologyBuilder, TopologyError
from squall.runtime.routing import build_routes
from squall.stateful import decode_state, encode_state, group_owner, key_group, owned_groups

from stateful_components import Count, PartitionSource, PlainSource, Sink, Source


def test_key_value_state_is_a_small_map():
    state = KeyValueState()
    state.put("a", 1)
    state.put(("b", 2), [1, 2])
    assert state.get("a") == 1 and state.get("missing") is None and state.get("missing", 0) == 0
    assert "a" in state and "z" not in state and len(state) == 2
    state.delete("a")
    state.delete("never there")
    assert dict(state.items()) == {("b", 2): [1, 2]} and list(state.keys()) == [("b", 2)]


def test_the_saved_form_keeps_tuple_keys_list_values_and_each_key_group():
    state = KeyValueState({"w": 3, ("x", 1): [1, [2]], 7: {"k": "v"}, b"raw": 1.5})
    entries = decode_state(encode_state(state, 16))
    assert {k: v for _, k, v in entries} == {"w": 3, ("x", 1): [1, [2]], 7: {"k": "v"}, b"raw": 1.5}
    assert all(group == key_group(k, 16) for group, k, _ in entries)


def test_a_value_msgpack_cannot_hold_is_named_with_its_key():
    with pytest.raises(TypeError, match=r"state key 'bad': .*set"):
        encode_state(KeyValueState({"ok": 1, "bad": {1, 2}}), 8)


@pytest.mark.parametrize("par", [1, 2, 3, 5, 7, 128])
def test_every_key_group_has_one_owner_and_ranges_are_contiguous(par):
    groups = 128
    owners = [group_owner(g, par, groups) for g in range(groups)]
    assert owners == sorted(owners) and set(owners) == set(range(par))
    for index in range(par):
        assert list(owned_groups(index, par, groups)) == [g for g in range(groups) if owners[g] == index]


def topology(count_par=3, mode=None, spout=Source, **config):
    builder = TopologyBuilder("kv")
    source = builder.add_spout("source", spout)
    builder.add_bolt("count", Count, par=count_par, inputs={source: Grouping.fields("word")})
    builder.add_bolt("sink", Sink, par=count_par, inputs={source: Grouping.fields("word")})
    if mode:
        config["topology.reliability.mode"] = mode
    builder.set_config(config)
    return builder.build().plan


@pytest.mark.parametrize("par", [2, 3, 5])
def test_fields_grouping_into_a_stateful_bolt_sends_a_key_to_the_owner_of_its_group(par):
    plan = topology(count_par=par, **{"squall.state.key.groups": 16})
    assert [c.stateful for c in plan.components] == [True, True, None]
    tasks = {"source": [1], "count": list(range(10, 10 + par)), "sink": list(range(20, 20 + par))}
    route = build_routes(plan, "source", tasks, {t: 1 for ts in tasks.values() for t in ts}, 1)["default"]
    words = [f"w{i}" for i in range(300)]
    to_count = {w: [t for t in route.targets([w], None) if t < 20][0] for w in words}
    assert all(to_count[w] == 10 + group_owner(key_group(w, 16), par, 16) for w in words)
    # a stateless bolt keeps fields grouping's own spread (hash modulo its tasks)
    to_sink = {w: [t for t in route.targets([w], None) if t >= 20][0] for w in words}
    assert len(set(to_sink.values())) == par


def test_effectively_once_needs_every_spout_stateful():
    with pytest.raises(TopologyError, match=r"components.source: .*EFFECTIVELY_ONCE.*StatefulSpout.*PlainSource"):
        topology(mode="EFFECTIVELY_ONCE", spout=PlainSource)
    assert topology(mode="EFFECTIVELY_ONCE") is not None


def test_a_stateful_bolt_has_at_most_one_task_per_key_group():
    with pytest.raises(TopologyError, match=r"components.count: parallelism 5 is above squall.state.key.groups 4"):
        topology(count_par=5, **{"squall.state.key.groups": 4})


def test_at_least_once_the_checkpoint_interval_stays_below_the_message_timeout():
    with pytest.raises(TopologyError, match=r"topology.state.checkpoint.interval.secs is 30 and topology.message.timeout.secs 30"):
        topology(mode="ATLEAST_ONCE", **{"topology.state.checkpoint.interval.secs": 30,
                                         "topology.message.timeout.secs": 30})


def test_the_hooks_exist_with_the_names_users_expect():
    for cls in (StatefulBolt, StatefulSpout):
        for hook in ("init_state", "pre_save", "post_save"):
            assert callable(getattr(cls, hook))


def test_an_update_keeps_a_stateful_spouts_parallelism():
    from squall.idl import replace
    from squall.stateful import check_stateful_update

    plan = topology()
    more = replace(plan, components=[replace(c, parallelism=2) for c in plan.components])
    with pytest.raises(TopologyError, match=r"components.source: a StatefulSpout's parallelism cannot change \(1 -> 2\)"):
        check_stateful_update(plan, more)
    bolts_only = replace(plan, components=[replace(c, parallelism=5) if c.name == "count" else c
                                           for c in plan.components])
    check_stateful_update(plan, bolts_only)


def test_a_rescalable_spouts_parallelism_may_change():
    from squall.idl import replace
    from squall.stateful import check_stateful_update

    builder = TopologyBuilder("parts")
    source = builder.add_spout("source", PartitionSource, par=2)
    builder.add_bolt("count", Count, par=2, inputs={source: Grouping.fields("word")})
    builder.set_config({"topology.reliability.mode": "EFFECTIVELY_ONCE"})
    plan = builder.build().plan
    assert [c.rescalable for c in plan.components] == [True, None]
    check_stateful_update(plan, replace(plan, components=[replace(c, parallelism=3) for c in plan.components]))
