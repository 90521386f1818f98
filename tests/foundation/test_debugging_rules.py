"""The rules of the debug/<topology> record (squall/debugging.py): parsing, expiry, reset, and which entry
is in force where (a component's over every process's)."""
import pytest

from squall import debugging
from squall.debugging import DebugError, LevelInForce, LevelRequest

NOW = 1000.0


def test_levels_parse_with_storm_names_and_optional_seconds():
    assert debugging.parse_level("ROOT=debug:30") == LevelRequest("root", "DEBUG", 30.0)
    assert debugging.parse_level("squall.runtime=WARN") == LevelRequest("squall.runtime", "WARNING", None)
    assert debugging.parse_level("my.Bolt=fatal:0.5") == LevelRequest("my.Bolt", "CRITICAL", 0.5)


@pytest.mark.parametrize("text, error", [
    ("root", "expected LOGGER=LEVEL"),
    ("root=LOUD", "unknown log level 'LOUD'"),
    ("root=DEBUG:0", "expected a positive number of seconds"),
    ("root=DEBUG:-1", "expected a positive number of seconds"),
    ("root=DEBUG:inf", "expected a positive number of seconds"),
    ("root=DEBUG:soon", "is not a number of seconds"),
    ("my logger=DEBUG", "logger name 'my logger'"),
    ("=DEBUG", "logger name ''"),
])
def test_bad_levels_are_refused_naming_what_is_wrong(text, error):
    with pytest.raises(DebugError, match=error):
        debugging.parse_level(text)


@pytest.mark.parametrize("value", [-1, 100.5, "ten", None, True])
def test_a_percent_outside_0_to_100_is_refused(value):
    with pytest.raises(DebugError, match="percent"):
        debugging.percent_of(value)


def test_a_component_entry_wins_over_every_process_and_a_chain_takes_the_most_verbose():
    record = debugging.set_levels(None, [LevelRequest("root", "INFO", None), LevelRequest("app", "ERROR", 10)],
                                  None, NOW)
    record = debugging.set_levels(record, [LevelRequest("app", "DEBUG", None)], "split", NOW)
    record = debugging.set_levels(record, [LevelRequest("app", "WARNING", None)], "count", NOW)
    assert debugging.levels_in_force(record, [], NOW) == {"root": LevelInForce("INFO", None),
                                                          "app": LevelInForce("ERROR", NOW + 10)}
    assert debugging.levels_in_force(record, ["split"], NOW)["app"] == LevelInForce("DEBUG", None)
    assert debugging.levels_in_force(record, ["count", "split"], NOW)["app"] == LevelInForce("DEBUG", None)
    assert debugging.levels_in_force(record, ["count"], NOW)["app"] == LevelInForce("WARNING", None)


def test_a_level_set_again_replaces_its_entry_and_expired_ones_are_not_in_force():
    record = debugging.set_levels(None, [LevelRequest("root", "DEBUG", 30)], None, NOW)
    record = debugging.set_levels(record, [LevelRequest("root", "ERROR", 5)], None, NOW + 1)
    assert len(record.levels) == 1
    assert debugging.levels_in_force(record, [], NOW + 5.9) == {"root": LevelInForce("ERROR", NOW + 6)}
    assert debugging.levels_in_force(record, [], NOW + 6) == {}
    assert debugging.next_expiry(record, NOW + 2) == NOW + 6
    assert debugging.next_expiry(record, NOW + 6) is None
    assert debugging.live(record, NOW + 7).levels == []  # a change drops what expired


def test_reset_removes_the_entry_of_that_component_only_and_refuses_one_not_set():
    record = debugging.set_levels(None, [LevelRequest("root", "DEBUG", None)], None, NOW)
    record = debugging.set_levels(record, [LevelRequest("root", "ERROR", None)], "count", NOW)
    after = debugging.reset_levels(record, ["root"], "count", NOW)
    assert [(e.logger, e.component) for e in after.levels] == [("root", None)]
    with pytest.raises(DebugError, match="no level of logger 'root' is set for component 'count'"):
        debugging.reset_levels(after, ["root"], "count", NOW)
    with pytest.raises(DebugError, match="no level of logger 'app'"):
        debugging.reset_levels(record, ["app"], None, NOW)


def test_sampling_of_a_component_wins_over_every_component_and_off_keeps_it_off():
    record = debugging.set_sampling(None, 1.0, None, None, NOW)
    record = debugging.set_sampling(record, 10.0, "split", 60, NOW)
    assert debugging.sampling_percent(record, "split", NOW) == 10.0
    assert debugging.sampling_percent(record, "count", NOW) == 1.0
    assert debugging.sampling_percent(record, "split", NOW + 60) == 1.0  # its own ran out
    off = debugging.sampling_off(record, "count", NOW)
    assert debugging.sampling_percent(off, "count", NOW) == 0.0  # off though every component is sampled
    assert debugging.sampling_percent(off, "sentence", NOW) == 1.0
    assert debugging.sampling_percent(debugging.sampling_off(off, None, NOW), "split", NOW, default=100.0) == 100.0


def test_the_json_view_lists_what_is_in_force_with_its_expiry():
    record = debugging.set_levels(None, [LevelRequest("root", "DEBUG", 30)], "count", NOW)
    record = debugging.set_sampling(record, 2.5, None, None, NOW)
    assert debugging.to_json(record, NOW) == {
        "levels": [{"logger": "root", "level": "DEBUG", "component": "count", "expires": NOW + 30}],
        "sampling": [{"component": None, "percent": 2.5, "expires": None}]}
    assert debugging.to_json(record, NOW + 30)["levels"] == []
