"""Reading the events logs (squall/events_log.py): rotated copies first, one component's, the newest N, those
after a time; and what --follow prints of each poll (scheduler/events.py), once each, late writes included."""
import json

from squall import events_log
from squall.scheduler import events


def line(t, component, n):
    return json.dumps({"time": t, "component": component, "task": 1, "stream": "default", "id": n, "values": [n]})


def test_events_are_read_oldest_first_across_rotated_copies(tmp_path):
    (tmp_path / "events.log.1").write_text(line(1.0, "a", 1) + "\n" + '{"time": 1.5, "compo' + "\n")  # cut
    (tmp_path / "events.log").write_text(line(3.0, "a", 3) + "\n" + line(2.0, "b", 2) + "\n" + line(4.0, "a", 4)[:9])
    files = events_log.files_in(str(tmp_path))
    assert [e["id"] for e in events_log.read(files)] == [1, 2, 3]
    assert [e["id"] for e in events_log.read(files, "a", limit=1)] == [3]
    assert [e["id"] for e in events_log.read(files, since=1.0)] == [2, 3]
    assert events.event_text(events_log.read(files, "b")[0]).endswith(" b[1] default id=2 [2]")
    assert events_log.files_in(str(tmp_path / "nothing")) == []


def test_following_prints_each_event_once_and_one_written_late_too():
    tail = events.Tail(now=10.0)
    assert tail.since == 10.0
    e11, e12 = json.loads(line(11.0, "a", 1)), json.loads(line(12.0, "a", 2))
    assert tail.new([e11, e12], asked=12.5) == [e11, e12]
    assert tail.since == 10.0  # asked again for the last FOLLOW_LAG_SECS: a task writes at its flushes
    late = json.loads(line(11.5, "b", 3))  # written after 12.0 was seen, by another task
    assert tail.new([e11, late, e12], asked=13.0) == [late]
    assert tail.new([e12], asked=30.0) == [] and tail.since == 30.0 - events.FOLLOW_LAG_SECS
    assert tail.printed == {}  # what is older than since is forgotten
