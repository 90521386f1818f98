"""The flame graph drawn from folded stacks (runtime/flamegraph.py) is valid SVG naming every function with
its share, and the in-process sampler (runtime/debug_agent.py) finds a thread busy in a named function and
not one that waits."""
import threading
import xml.etree.ElementTree as ET

from squall.runtime.debug_agent import sample_stacks
from squall.runtime.flamegraph import parse_folded, render

SVG = "{http://www.w3.org/2000/svg}"


def titles(svg):
    return [t.text for t in ET.fromstring(svg.encode()).iter(f"{SVG}title")]


def test_the_svg_is_valid_and_names_each_frame_with_its_share():
    folded = parse_folded("main;loop;handle<T> & co 30\nmain;loop;idle 10\nmain;gc 0\nnot a stack line\n")
    assert folded == {"main;loop;handle<T> & co": 30, "main;loop;idle": 10, "main;gc": 0}
    svg = render(folded, "task 3 <spin>")
    assert sorted(titles(svg)) == ["all - 40 samples, 100.0%", "handle<T> & co - 30 samples, 75.0%",
                                   "idle - 10 samples, 25.0%", "loop - 40 samples, 100.0%",
                                   "main - 40 samples, 100.0%"]
    root = ET.fromstring(svg.encode())
    widths = {g.find(f"{SVG}title").text.partition(" - ")[0]: float(g.find(f"{SVG}rect").get("width"))
              for g in root.iter(f"{SVG}g")}
    assert abs(widths["handle<T> & co"] - 3 * widths["idle"]) < 0.01
    assert "task 3 <spin>" in [t.text for t in root.iter(f"{SVG}text")]


def test_no_samples_draws_an_empty_graph():
    assert titles(render({}, "nothing")) == []


def busy_in_a_named_function(stop):
    while not stop.is_set():
        sum(range(1000))


def test_the_sampler_weighs_each_stack_by_the_cpu_its_thread_used():
    stop = threading.Event()
    workers = [threading.Thread(target=busy_in_a_named_function, args=(stop,), name="busy-worker"),
               threading.Thread(target=stop.wait, name="waiting-worker")]
    for w in workers:
        w.start()
    try:
        folded, unit = sample_stacks(0.5, 0.01)
    finally:
        stop.set()
        for w in workers:
            w.join()
    assert unit == "cpu ms"
    busy = {s: n for s, n in folded.items() if s.startswith("thread busy-worker;")}
    inside = sum(n for s, n in busy.items() if "busy_in_a_named_function (test_flamegraph.py)" in s)
    assert inside >= 0.9 * sum(busy.values()) > 0
    assert not [s for s in folded if s.startswith("thread waiting-worker;")]  # waiting uses no cpu
    assert not [s for s in folded if "sample_stacks" in s]  # the sampler leaves itself out
