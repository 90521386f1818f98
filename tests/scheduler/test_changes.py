"""``scheduler/changes.py``: what an update asks for, checked; the plan it gives; how it is shown. Pure."""
import chain_pipeline
import pytest
from scheduler_plans import word_count

from squall.chaining import CHAINING_KEY, chains
from squall.conf import base_config
from squall.errors import SquallError
from squall.logical import component_config, decode_config, with_overrides
from squall.packing import pack, with_component_config
from squall.scheduler.changes import (
    TopologyUpdate,
    describe,
    diff_json,
    parse_assignments,
    parse_config_properties,
    plan_update,
)


def test_parse_assignments_reads_component_equals_value():
    assert parse_assignments(["split=4", " count = 3 "], "--component-parallelism", int) == {"split": 4, "count": 3}
    assert parse_assignments(["split=0.5"], "--component-cpu", float) == {"split": 0.5}
    assert parse_assignments([], "--component-parallelism", int) == {}


@pytest.mark.parametrize("text,kind,message", [
    ("split", int, r"--component-parallelism 'split': expected COMPONENT=N with N an integer"),
    ("=4", int, r"expected COMPONENT=N"),
    ("split=four", int, r"with N an integer"),
    ("split=lots", float, r"with N a number"),
])
def test_parse_assignments_names_the_option_and_the_text(text, kind, message):
    with pytest.raises(SquallError, match=message):
        parse_assignments([text], "--component-parallelism", kind)


def test_parse_config_properties_splits_per_component_from_every_component():
    per, every = parse_config_properties(["split:squall.component.cpu=0.5", "squall.component.ram.mb=512"])
    assert per == {"split": {"squall.component.cpu": 0.5}}
    assert every == {"squall.component.ram.mb": 512}
    with pytest.raises(SquallError, match="expected KEY=VALUE"):
        parse_config_properties(["squall.component.cpu"])


@pytest.mark.parametrize("update,message", [
    (TopologyUpdate(parallelism={"spilt": 3}), r"has no component 'spilt' \(components: sentence, split, count\)"),
    (TopologyUpdate(parallelism={"split": 0}), r"--component-parallelism split=0: must be a positive integer"),
    (TopologyUpdate(parallelism={"split": True}), r"must be a positive integer"),
    (TopologyUpdate(component_config={"split": {"topology.workers": 3}}),
     r"--config-property split:topology.workers: update changes parallelism, the resources"),
    (TopologyUpdate(config={"squall.component.cpu": "lots"}),
     r"squall.component.cpu \(--config-property squall.component.cpu\): expected a number"),
])
def test_an_update_is_refused_naming_what_is_wrong(update, message):
    with pytest.raises(SquallError, match=message):
        update.check(word_count())


def test_a_key_given_at_submit_is_updated_for_every_component_only():
    topology = with_overrides(word_count(), {"squall.component.cpu": 0.25})
    with pytest.raises(SquallError, match=r"split:squall.component.cpu: the topology was submitted with "
                                          r"--config-property squall.component.cpu"):
        TopologyUpdate(component_config={"split": {"squall.component.cpu": 0.5}}).check(topology)
    changed = TopologyUpdate(config={"squall.component.cpu": 0.5}).apply(topology)
    assert decode_config(changed.overrides) == {"squall.component.cpu": 0.5}


def test_apply_changes_parallelism_and_resources_and_nothing_else():
    topology = word_count()
    changed = TopologyUpdate(parallelism={"split": 3},
                             component_config={"count": {"squall.component.ram.mb": 300}}).apply(topology)
    assert [(c.name, c.parallelism) for c in changed.components] == [("sentence", 1), ("split", 3), ("count", 2)]
    assert component_config(changed, "count")["squall.component.ram.mb"] == 300
    assert component_config(changed, "split")["squall.component.ram.mb"] == \
        component_config(topology, "split")["squall.component.ram.mb"]
    assert changed.config == topology.config and changed.name == topology.name
    assert not TopologyUpdate()
    assert TopologyUpdate(parallelism={"split": 3})


def test_an_update_never_fuses_tasks_that_ran_apart():
    """sentence (1 task) -> split (shuffle): at parallelism 1 split would chain to sentence; it gets ``head``."""
    changed = TopologyUpdate(parallelism={"split": 1}).apply(word_count())
    split = next(c for c in changed.components if c.name == "split")
    assert decode_config(split.config)[CHAINING_KEY] == "head"


def test_an_update_splits_a_chain_at_a_head():
    """The health manager's split_chain: ``squall.chaining: head`` on a chained component, through update."""
    light = {name: {"squall.component.cpu": 0.25} for name in ("read", "parse", "enrich")}
    topology = with_component_config(chain_pipeline.topology.plan, light)
    assert chains(topology) == [("read", "parse", "enrich")]
    split = TopologyUpdate(component_config={"enrich": {CHAINING_KEY: "head"}}).apply(topology)
    assert chains(split) == [("read", "parse")]
    with pytest.raises(SquallError, match=r"squall.chaining \(--config-property enrich:squall.chaining\)"):
        TopologyUpdate(component_config={"enrich": {CHAINING_KEY: "sometimes"}}).check(topology)


def test_plan_update_repacks_moving_as_little_as_possible():
    topology = word_count()
    current = pack(topology, base_config())
    planned = plan_update("word_count", topology, current, TopologyUpdate(parallelism={"count": 3}), base_config())
    assert planned.changed
    assert planned.changes == [("count", "parallelism", 2, 3)]
    assert [i.component for i in planned.diff.added] == ["count"] and planned.diff.removed == []
    assert planned.diff.moved == []
    kept = {i.id.task_id for c in current.containers for i in c.instances}
    assert kept < {i.id.task_id for c in planned.proposed.containers for i in c.instances}


def test_plan_update_of_nothing_changes_nothing():
    topology = word_count()
    current = pack(topology, base_config())
    planned = plan_update("word_count", topology, current, TopologyUpdate(parallelism={"count": 2}), base_config())
    assert not planned.changed and planned.proposed.id == current.id
    assert describe(planned)[1] == "  nothing changes"


def test_an_instance_too_big_for_any_container_is_a_user_error():
    topology = word_count()
    current = pack(topology, base_config())
    with pytest.raises(SquallError, match=r"cannot update topology 'word_count': .*"):
        plan_update("word_count", topology, current,
                    TopologyUpdate(component_config={"count": {"squall.component.cpu": 64.0}}), base_config())


def test_describe_and_diff_json_show_the_same_update():
    topology = word_count()
    current = pack(topology, base_config())
    planned = plan_update("word_count", topology, current,
                          TopologyUpdate(parallelism={"count": 3}, component_config={"split": {
                              "squall.component.cpu": 0.25}}), base_config())
    lines = describe(planned)
    assert lines[0] == "update of topology 'word_count':"
    assert any(line.split() == ["count", "parallelism", "2", "->", "3"] for line in lines)
    assert any(line.split() == ["split", "cpu", "0.5", "->", "0.25", "cores"] for line in lines)
    data = diff_json(planned)
    assert data["topology"] == "word_count"
    assert {"component": "count", "what": "parallelism", "before": 2, "after": 3} in data["changes"]
    assert data["packing_plan"] == {"before": current.id, "after": planned.proposed.id}
    assert len(data["added"]) == 1 and data["added"][0].startswith("count:")
    assert sorted(data["resized"]) == sorted(f"split:{i.id.task_id}" for c in current.containers
                                             for i in c.instances if i.id.component == "split")
