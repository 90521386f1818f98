"""build() checks a WindowedBolt: its declarations, its inputs and whether its windows can complete
at least once (topology.message.timeout.secs / topology.max.spout.pending)."""
import json

import pytest
import window_components as wc

from squall import Grouping, TopologyBuilder, TopologyError


def build(bolt, config=None, component_config=None):
    b = TopologyBuilder("t")
    s = b.add_spout("stamps", wc.StampedSpout)
    b.add_bolt("totals", bolt, inputs={s: Grouping.fields("key")}, config=component_config)
    b.set_config(config or {})
    return b.build()


RELIABLE = {"topology.reliability.mode": "ATLEAST_ONCE"}


def test_a_good_windowed_bolt_builds_and_gets_its_own_tick():
    assert json.loads(build(wc.Totals).component("totals").config["topology.tick.tuple.freq.secs"]) == 1.0  # event
    count = build(wc.CountTotals).component("totals").config
    assert "topology.tick.tuple.freq.secs" not in count  # count windows need no tick
    ticks = build(wc.ProcessingTotals).component("totals").config
    assert json.loads(ticks["topology.tick.tuple.freq.secs"]) == 0.05
    own = build(wc.ProcessingTotals, component_config={"topology.tick.tuple.freq.secs": 0.2})
    assert json.loads(own.component("totals").config["topology.tick.tuple.freq.secs"]) == 0.2
    assert build(wc.Totals).component("totals").auto_ack is False  # acked when its last window is processed


@pytest.mark.parametrize("bolt, message", [
    (wc.NoWindow, r"components.totals.class: NoWindow.window must be a squall.Window .*got None"),
    (wc.NoProcessWindow, r"NoProcessWindow must override process_window\(self, window\)"),
    (wc.OwnProcess, r"OwnProcess overrides process\(\), which feeds its windows"),
    (wc.ReduceNoMerge, r"ReduceNoMerge has reduce\(acc, tup\) and a sliding 4 s every 2 s window: it also needs "
                       r"merge\(a, b\)"),
    (wc.BadField, r"BadField.timestamp_field is 'when', but input stream stamps/default declares "
                  r"\['key', 'amount', 'ts'\]"),
    (wc.UndeclaredLate, r"components.totals.outputs: UndeclaredLate.late_stream is 'too_late', which "
                        r"UndeclaredLate does not declare \(declared: default, late\)"),
    (wc.NarrowLate, r"late stream 'late' has 1 fields, but late tuples from stamps/default have 3"),
    (wc.LateInProcessingTime, r"late_stream without timestamp_field: only event time has late tuples"),
    (wc.CountEventTime, r"has event time \(timestamp_field or timestamp\(\)\) and a sliding 100 tuples every 20 tuples window: count windows"),
])
def test_bad_windowed_bolts_are_refused_naming_the_fault(bolt, message):
    with pytest.raises(TopologyError, match=message):
        build(bolt)


def test_at_least_once_a_window_that_cannot_complete_is_refused_naming_both_keys():
    build(wc.Totals, RELIABLE)  # 10 + 2 + 1 s within the default 30 s
    with pytest.raises(TopologyError, match=(
            r"components.totals: Totals's sliding 10 s every 2 s window holds a tuple up to 13 s \(length \+ slide "
            r"\+ lag\) before acking it, but topology.message.timeout.secs is 12, topology.max.spout.pending is "
            r"1000: its tree would time out")):
        build(wc.Totals, {**RELIABLE, "topology.message.timeout.secs": 12})
    with pytest.raises(TopologyError, match=(
            r"CountTotals's sliding 100 tuples every 20 tuples window holds up to 120 tuples .* but "
            r"topology.message.timeout.secs is 30, topology.max.spout.pending is 100: the window could never")):
        build(wc.CountTotals, {**RELIABLE, "topology.max.spout.pending": 100})
    build(wc.CountTotals, {**RELIABLE, "topology.max.spout.pending": None})
    build(wc.CountTotals, {"topology.max.spout.pending": 100})  # at most once nothing waits for acks


def test_a_timestamp_that_is_not_a_number_is_refused_naming_the_field_and_stream():
    from squall import Tuple

    fields = ["key", "amount", "ts"]
    assert wc.Totals().timestamp(Tuple(None, "stamps", "default", 1, ["k", 1, 12], fields)) == 12
    with pytest.raises(TypeError, match="Totals: timestamp_field 'ts' of a tuple from stamps/default is 'noon', "
                                        "not a number of seconds"):
        wc.Totals().timestamp(Tuple(None, "stamps", "default", 1, ["k", 1, "noon"], fields))


def test_the_command_line_s_config_is_checked_too(tmp_path, capsys):
    from squall.cli import main

    path = tmp_path / "tumbling_ten.py"
    path.write_text("from squall import Spout, TopologyBuilder, Window, WindowedBolt\n"
                    "class S(Spout):\n    outputs = ['x']\n"
                    "class Ten(WindowedBolt):\n    window = Window.tumbling(duration=10)\n"
                    "    def process_window(self, window):\n        pass\n"
                    "b = TopologyBuilder('tumbling_ten')\nb.add_bolt('ten', Ten, inputs=[b.add_spout('s', S)])\n"
                    "topology = b.build()\n")
    assert main(["validate", str(path), "--config-property", "topology.reliability.mode=ATLEAST_ONCE"]) == 0
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text("topology.message.timeout.secs: 15\n")
    code = main(["validate", str(path), "--config-property", "topology.reliability.mode=ATLEAST_ONCE",
                 "--config-path", str(cluster)])
    err = capsys.readouterr().err
    assert code == 2 and ("components.ten: Ten's tumbling 10 s window holds a tuple up to 20 s (length + slide + lag) "
                          "before acking it, but topology.message.timeout.secs is 15, topology.max.spout.pending "
                          "is 1000") in err
