"""Reading the events logs (scheduler/events.py): rotated copies first, one component's, the newest N; and
--follow's events, appended from then on, a line being written only once it is whole."""
import json

import pytest

from squall.errors import SquallError
from squall.scheduler import events


def line(t, component, n):
    return json.dumps({"time": t, "component": component, "task": 1, "stream": "default", "id": n, "values": [n]})


def test_events_are_read_oldest_first_across_rotated_copies(tmp_path):
    current, rotated = tmp_path / "events.log", tmp_path / "events.log.1"
    rotated.write_text(line(1.0, "a", 1) + "\n" + '{"time": 1.5, "compo' + "\n")  # a line cut by a rotation
    current.write_text(line(3.0, "a", 3) + "\n" + line(2.0, "b", 2) + "\n")
    files = [str(rotated), str(current)]
    assert [e["id"] for e in events.read_events(files)] == [1, 2, 3]
    assert [e["id"] for e in events.read_events(files, "a", limit=1)] == [3]
    assert events.event_text(events.read_events(files, "b")[0]).endswith(" b[1] default id=2 [2]")


def test_following_gives_whole_lines_appended_since_and_survives_a_rotation(tmp_path):
    path = tmp_path / "events.log"
    path.write_text(line(1.0, "a", 1) + "\n")
    follower = events.Follower(lambda: [str(tmp_path / "events.log.1"), str(path)], "a")
    with open(path, "a") as f:
        f.write(line(2.0, "b", 2) + "\n" + line(3.0, "a", 3) + "\n" + line(4.0, "a", 4)[:10])
    assert [e["id"] for e in follower.poll()] == [3]
    with open(path, "a") as f:
        f.write(line(4.0, "a", 4)[10:] + "\n")
    assert [e["id"] for e in follower.poll()] == [4]
    assert follower.poll() == []
    path.write_text(line(5.0, "a", 5) + "\n")  # copied and truncated, then written again
    assert [e["id"] for e in follower.poll()] == [5]


def test_on_yarn_the_events_logs_are_named_where_the_containers_keep_them(tmp_path):
    from squall.idl import schema
    from squall.state import Kind, LocalStateManager, member

    with LocalStateManager(str(tmp_path)) as state:
        state.put(Kind.EXECUTION_STATE, "t", schema.ExecutionState(
            topology_name="t", run_id="r", run_dir=str(tmp_path), submit_time=0.0, submitter="me",
            status=schema.TopologyStatus.RUNNING, secret="s", cluster="yarn", python="python"))
        state.put(Kind.CONTAINER, member("t", 1), schema.ContainerStatus(
            container=1, host="node7", executor_pid=1, updated=0.0,
            processes=[schema.ProcessStatus(name="stmgr", pid=2, restarts=0, crashes=0,
                                            log_file="/yarn/logs/container_01/stmgr.log")]))
        with pytest.raises(SquallError, match=r"runs on yarn: its events logs are in its containers' log folders "
                                              r"\(/yarn/logs/container_01\)"):
            events.event_files(state, "t")
