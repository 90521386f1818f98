"""Windowing rules as a pure state machine (squall/window_state.py): exact windows, watermarks, late
tuples, idle upstream tasks, future stamps, expiry and the incremental form."""
import random

import pytest

from squall import Window
from squall.window_state import Incremental, Windower

WALL = 1e12  # a clock far after every test timestamp (no future-stamp cap applies)


def feed(windower, items, task=1, wall=WALL, now=0.0):
    """(late items, [(start, end, tuples, new, expired, released), ...]) of feeding ``(ts, name)`` items."""
    late, out = [], []
    for ts, name in items:
        is_late, fired = windower.on_tuple((ts, name), ts, task, wall, now)
        if is_late:
            late.append(name)
        out.extend(describe(fired))
    return late, out


def describe(fired):
    return [(f.view.start, f.view.end, names(f.view.tuples), names(f.view.new), names(f.view.expired),
             names(f.released)) for f in fired]


def names(items):
    return [i[1] if isinstance(i, tuple) else i for i in items]


# Window ---------------------------------------------------------------------------------------
def test_window_constructors_and_their_errors():
    assert Window.tumbling(duration=10) == Window(10.0, 10.0, False)
    assert Window.tumbling(count=5) == Window(5, 5, True)
    assert Window.sliding(duration=60, every=10).size == 6
    assert Window.sliding(count=6, every=2).size == 3
    with pytest.raises(ValueError, match="exactly one of duration= .* and count="):
        Window.tumbling(duration=1, count=2)
    with pytest.raises(ValueError, match="exactly one of"):
        Window.tumbling()
    with pytest.raises(ValueError, match="give every="):
        Window.sliding(duration=10)
    with pytest.raises(ValueError, match="every=20 is longer than the window"):
        Window.sliding(duration=10, every=20)
    odd = Window.sliding(duration=60, every=25)  # not a whole number of slides: 5 s panes, as Storm allows
    assert (odd.pane, odd.size, odd.step) == (5.0, 12, 5)
    assert [(odd.start(w), odd.end(w)) for w in (odd.ending_from(0), odd.ending_from(5))] == [(-35, 25), (-10, 50)]
    assert (Window.sliding(count=5, every=2).pane, Window.sliding(count=5, every=2).size) == (1, 5)
    with pytest.raises(ValueError, match="count must be a positive whole number of tuples, got 2.5"):
        Window.tumbling(count=2.5)
    with pytest.raises(ValueError, match="duration must be a positive number of seconds, got -1"):
        Window.tumbling(duration=-1)
    assert Window.sliding(duration=0.3, every=0.1).size == 3  # 0.3 / 0.1 is 2.9999999999999996


def test_panes_are_half_open_and_exact_at_boundaries():
    w = Window.tumbling(duration=0.1)
    assert [w.pane_of(x) for x in (0.0, 0.0999, 0.1, 0.3, 0.7, -0.05)] == [0, 0, 1, 3, 7, -1]
    s = Window.sliding(duration=30, every=10)
    assert (s.start(5), s.end(5)) == (30, 60)  # window 5 is panes 3, 4, 5: [30, 60)


# duration windows in event time ----------------------------------------------------------------
def test_tumbling_event_time_fires_when_the_watermark_reaches_the_end():
    w = Windower(Window.tumbling(duration=10), timestamped=True)
    w.expect([1], 0.0)
    late, out = feed(w, [(1, "a"), (9.5, "b"), (10, "c")])
    assert late == [] and out == [(0, 10, ["a", "b"], ["a", "b"], [], ["a", "b"])]  # 10 is in [10, 20)
    late, out = feed(w, [(19.99, "d"), (25, "e")])
    assert out == [(10, 20, ["c", "d"], ["c", "d"], ["a", "b"], ["c", "d"])]
    late, out = feed(w, [(41, "f")])  # [20, 30) fires; the empty [30, 40) does not
    assert out == [(20, 30, ["e"], ["e"], ["c", "d"], ["e"])]


def test_sliding_event_time_tuples_new_expired_and_release():
    w = Windower(Window.sliding(duration=3, every=1), timestamped=True)
    w.expect([1], 0.0)
    _, out = feed(w, [(0.5, "a"), (1.5, "b"), (2.5, "c"), (3.5, "d"), (4.2, "e"), (7.1, "f")])
    assert out == [
        (-2, 1, ["a"], ["a"], [], []),
        (-1, 2, ["a", "b"], ["b"], [], []),
        (0, 3, ["a", "b", "c"], ["c"], [], ["a"]),  # a's last window: acked after it
        (1, 4, ["b", "c", "d"], ["d"], ["a"], ["b"]),
        (2, 5, ["c", "d", "e"], ["e"], ["b"], ["c"]),
        (3, 6, ["d", "e"], [], ["c"], ["d"]),
        (4, 7, ["e"], [], ["d"], ["e"]),
    ]
    assert w.held() == 1  # only f, in windows not yet closed


def test_out_of_order_within_lag_is_in_its_window_and_below_the_watermark_is_late():
    w = Windower(Window.tumbling(duration=10), timestamped=True, lag=5)
    w.expect([1], 0.0)
    late, out = feed(w, [(3, "a"), (12, "b"), (8, "c"), (14.9, "d")])
    assert late == [] and out == []  # watermark 9.9: [0, 10) still open
    late, out = feed(w, [(15, "e"), (9.99, "f"), (10, "g")])  # watermark 10: fires [0, 10); 9.99 is late
    assert out == [(0, 10, ["a", "c"], ["a", "c"], [], ["a", "c"])]
    assert late == ["f"]
    assert names(w.panes[1].items) == ["b", "d", "e", "g"]


def test_watermark_is_the_minimum_over_upstream_tasks_and_never_goes_back():
    w = Windower(Window.tumbling(duration=10), timestamped=True)
    w.expect([1, 2], 0.0)
    assert feed(w, [(25, "a")], task=1)[1] == []  # task 2 has sent nothing: no watermark yet
    assert w.watermark.value == float("-inf")
    _, out = feed(w, [(12, "b")], task=2)
    assert out == [] and w.watermark.value == 12  # [10, 20) holds b; min(25, 12)
    _, out = feed(w, [(21, "c")], task=2)
    assert out == [(10, 20, ["b"], ["b"], [], ["b"])]
    feed(w, [(22, "d")], task=1)  # task 1's largest stays 25
    assert w.watermark.value == 21


def test_an_idle_upstream_task_stops_holding_the_watermark_after_the_timeout():
    w = Windower(Window.tumbling(duration=10), timestamped=True, idle_timeout=5.0)
    w.expect([1, 2], now=100.0)
    _, out = feed(w, [(3, "a"), (15, "b")], task=1, now=104.0)
    assert out == []  # task 2 silent for 4 s (since the bolt started): still waited for
    _, out = feed(w, [(16, "c")], task=1, now=105.5)
    assert out == [(0, 10, ["a"], ["a"], [], ["a"])]
    # task 2 joins again with its next tuple, late if below the watermark
    late, _ = feed(w, [(12, "d")], task=2, now=106.0)
    assert late == ["d"]
    late, out = feed(w, [(30, "e")], task=1, now=106.5)
    assert w.watermark.value == 16 and out == []  # task 2's largest (12 counted) holds it; it never goes back
    w2 = Windower(Window.tumbling(duration=10), timestamped=True, idle_timeout=None)
    w2.expect([1, 2], now=0.0)
    assert feed(w2, [(3, "a"), (50, "b")], task=1, now=1e6)[1] == []  # null: waits for ever (Storm)


def test_a_future_stamped_tuple_does_not_move_the_watermark_past_now():
    w = Windower(Window.tumbling(duration=10), timestamped=True, lag=2)
    w.expect([1], 0.0)
    late, out = feed(w, [(995, "a"), (1e9, "future")], wall=1000.0)
    assert out == [] and w.watermark.value == 998  # counted as its arrival, 1000, minus lag
    late, out = feed(w, [(999, "b"), (1001, "c")], wall=1002.0)
    assert late == [] and out == []  # honest tuples after it are not late (uncapped, all would be)
    assert w.watermark.value == 999
    late, out = feed(w, [(1003, "d")], wall=1003.0)
    assert out == [(990, 1000, ["a", "b"], ["a", "b"], [], ["a", "b"])]
    assert [p for p in w.pane_ids] == [100, 10 ** 8]  # the future tuple waits in its own window


# count windows ----------------------------------------------------------------------------------
def test_tumbling_count_window():
    w = Windower(Window.tumbling(count=3))
    _, out = feed(w, [(None, x) for x in "abcdefg"])
    assert out == [(0, 3, list("abc"), list("abc"), [], list("abc")),
                   (3, 6, list("def"), list("def"), list("abc"), list("def"))]
    assert w.held() == 1


def test_sliding_count_window_first_windows_are_partial():
    w = Windower(Window.sliding(count=4, every=2))
    _, out = feed(w, [(None, x) for x in "abcdefgh"])
    assert out == [(0, 2, list("ab"), list("ab"), [], []),
                   (0, 4, list("abcd"), list("cd"), [], list("ab")),
                   (2, 6, list("cdef"), list("ef"), list("ab"), list("cd")),
                   (4, 8, list("efgh"), list("gh"), list("cd"), list("ef"))]


def test_sliding_count_window_of_no_whole_number_of_slides():
    w = Windower(Window.sliding(count=5, every=2))  # Storm's: the last 5 tuples, every 2
    _, out = feed(w, [(None, x) for x in "abcdefg"])
    assert [(start, end, tuples, new, expired) for start, end, tuples, new, expired, _ in out] == [
        (0, 2, list("ab"), list("ab"), []),
        (0, 4, list("abcd"), list("cd"), []),
        (1, 6, list("bcdef"), list("ef"), list("a"))]
    assert names(w.panes[w.pane_ids[0]].items) == ["d"]  # b and c are in no later window: [3, 8) starts at d


# processing time ------------------------------------------------------------------------------
def test_processing_time_windows_fire_on_ticks_and_nothing_is_late():
    w = Windower(Window.tumbling(duration=1))
    assert w.on_tuple("a", None, 1, 100.2, 0)[1] == [] and w.on_tuple("b", None, 1, 100.9, 0)[1] == []
    assert w.on_tick(100.99) == []
    fired = w.on_tick(101.0)
    assert describe(fired) == [(100, 101, ["a", "b"], ["a", "b"], [], ["a", "b"])]
    late, fired = w.on_tuple("c", None, 1, 100.5, 0)  # the clock went back: taken at the latest time seen
    assert not late and fired == [] and names(w.panes[101].items) == ["c"]


# incremental form ---------------------------------------------------------------------------------
def sums(kept):
    return Windower(Window.sliding(duration=3, every=1), timestamped=True,
                    incremental=Incremental(lambda acc, t: acc + t[0], lambda a, b: a + b, lambda: 0),
                    keep_tuples=kept)


def test_incremental_holds_one_accumulator_per_slide_and_no_tuples_at_most_once():
    w = sums(kept=False)
    w.expect([1], 0.0)
    values = []
    for ts in [0.5, 1.5, 1.7, 2.5, 3.5, 7]:
        values += [(f.view.start, f.view.value, f.anchors, f.released) for f in w.on_tuple((ts,), ts, 1, WALL, 0)[1]]
    assert values == [(-2, 0.5, [], []), (-1, 3.7, [], []), (0, 6.2, [], []), (1, 9.2, [], []),
                      (2, 6.0, [], []), (3, 3.5, [], [])]  # [4, 7) holds nothing: it does not fire
    assert all(not p.items for p in w.panes.values())
    with pytest.raises(AttributeError, match="reduces its windows incrementally"):
        w.on_tuple((20,), 20, 1, WALL, 0)[1][0].view.tuples


def test_incremental_at_least_once_keeps_tuples_to_anchor_and_ack():
    w = sums(kept=True)
    w.expect([1], 0.0)
    fired = [f for ts in [0.5, 1.5, 4] for f in w.on_tuple((ts,), ts, 1, WALL, 0)[1]]
    assert [(f.view.value, f.anchors, f.released) for f in fired] == [
        (0.5, [(0.5,)], []), (2.0, [(0.5,), (1.5,)], []), (2.0, [(0.5,), (1.5,)], [(0.5,)]),
        (1.5, [(1.5,)], [(1.5,)])]


# against a plain-Python reference ----------------------------------------------------------------
def reference(length, every, stamps):
    """Every non-empty window over ``stamps`` (in order, none late), by brute force: windows end at
    multiples of ``every`` (in thousandths, exact) and are ``length`` long, half-open."""
    out = []
    millis = [round(ts * 1000) for ts in stamps]
    length, every = round(length * 1000), round(every * 1000)
    end = (min(millis) // every) * every
    while end <= max(millis):
        inside = [ts for ts, m in zip(stamps, millis) if end - length <= m < end]
        if inside:
            out.append(((end - length) / 1000, end / 1000, inside))
        end += every
    return out


@pytest.mark.parametrize("length,every", [(2.5, 2.5), (6, 1.5), (1, 0.1), (10, 4), (2.5, 1), (0.7, 0.3)])
def test_random_ordered_input_gives_the_reference_windows_and_acks_each_tuple_once(length, every):
    """Whole numbers of slides or not (then panes are their greatest common divisor, 0.1 s for 0.7 every 0.3)."""
    rng = random.Random(7)
    stamps = sorted(round(rng.uniform(0, 60), 3) for _ in range(400))
    window = Window.tumbling(duration=length) if length == every else Window.sliding(duration=length, every=every)
    w = Windower(window, timestamped=True)
    w.expect([1], 0.0)
    fired = [f for ts in stamps for f in w.on_tuple(ts, ts, 1, WALL, 0)[1]]
    assert [(f.view.start, f.view.end, f.view.tuples) for f in fired] == reference(length, every, stamps)
    released = [t for f in fired for t in f.released] + [t for p in w.panes.values() for t in p.items]
    assert sorted(released) == stamps  # each tuple acked once, or still held


def test_a_plan_change_changes_the_upstream_tasks_the_watermark_waits_for():
    w = Windower(Window.tumbling(duration=10), timestamped=True)
    w.expect([1, 2], 0.0)
    feed(w, [(5, "a")], task=1)
    feed(w, [(3, "b")], task=2)
    assert w.watermark.value == 3
    w.expect([1], 1.0)  # task 2 left the plan (a tick after the change)
    assert feed(w, [(12, "c")], task=1)[1] == [(0, 10, ["a", "b"], ["a", "b"], [], ["a", "b"])]
    w.expect([1, 3], 2.0)  # task 3 joined: it holds the watermark until it sends
    assert feed(w, [(30, "d")], task=1)[1] == [] and w.watermark.value == 12
