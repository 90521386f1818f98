"""Declaring a combiner: what build() takes and refuses, and which streamlet operators combine."""
import combine_components as cc
import pytest

from squall import Grouping, TopologyBuilder, TopologyError
from window_components import StampedSpout


def build(bolt):
    b = TopologyBuilder("t")
    s = b.add_spout("stamps", StampedSpout)
    b.add_bolt("totals", bolt, inputs={s: Grouping.fields("key")})
    return b.build()


def test_a_static_combine_builds_on_a_bolt_and_a_processing_time_duration_window():
    assert build(cc.Adds).component("totals").class_name == "combine_components:Adds"
    assert build(cc.WindowedAdds).component("totals").class_name == "combine_components:WindowedAdds"


@pytest.mark.parametrize("bolt, message", [
    (cc.MethodCombine, r"components.totals.class: MethodCombine.combine must be a @staticmethod: it runs in the "
                       r"tasks that feed 'totals', which have no MethodCombine object"),
    (cc.EventTimeAdds, r"components.totals.class: EventTimeAdds has combine\(\) and event time: a partial has no one "
                       r"timestamp; combine only into a processing-time duration window"),
    (cc.CountAdds, r"CountAdds has combine\(\) and a count window: a partial would count as one tuple"),
])
def test_a_combine_that_cannot_be_exact_is_refused_naming_the_bolt(bolt, message):
    with pytest.raises(TopologyError, match=message):
        build(bolt)


def test_reduce_by_key_combines_when_asked_and_windows_in_processing_time_by_duration():
    cc.streamlets.build()
    compiled = cc.streamlets.compiled
    assert compiled.running.combine is None  # one running value per element, as documented
    assert compiled.combined.combine(["k", 2], ["k", 3]) == ["k", 5]
    assert compiled.per_second.combine(["k", 2], ["k", 3]) == ["k", 5]
    assert compiled.by_time.combine is None and compiled.per_ten.combine is None
