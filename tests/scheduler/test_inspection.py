"""``scheduler/inspection.py``'s checks on a real local state manager (no process runs): a task found in its
chain's process, one not running or not in the plan refused in one line, a debug server that does not
answer named, and a search that reports the containers it could not ask."""
import socket

import pytest
from scheduler_plans import recorded

from squall.errors import SquallError
from squall.idl import schema
from squall.scheduler import inspection
from squall.state import Kind


def closed_port_address():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


def process(name, pid):
    return schema.ProcessStatus(name=name, pid=pid, restarts=0, crashes=0, log_file=f"/l/{name}.log")


@pytest.fixture
def records(state, tmp_path):
    recorded(state, str(tmp_path))
    address = closed_port_address()
    state.put(Kind.CONTAINER, "word_count/1", schema.ContainerStatus(
        container=1, host="h1", executor_pid=11, updated=0.0, debug_address=address,
        processes=[process("instance-1-sentence+3-split", 12), process("instance-4-count", 0)]))
    return address


def test_a_task_is_found_in_its_chain_s_process(state, records):
    record, found = inspection.locate_task(state, "word_count", 3)
    assert (record.container, found.name) == (1, "instance-1-sentence+3-split")


def test_tasks_not_running_or_not_in_the_plan_are_refused_in_one_line(state, records):
    with pytest.raises(SquallError, match=r"^task 4 \(instance-4-count, container 1\) is not running: restarting, "
                                          r"or past its restart budget \(squall show word_count\)$"):
        inspection.locate_task(state, "word_count", 4)
    with pytest.raises(SquallError, match=r"^topology 'word_count' has no task 9 \(its tasks: 1-5\)$"):
        inspection.locate_task(state, "word_count", 9)
    with pytest.raises(SquallError, match=r"^task 2 of topology 'word_count' is not running: its container has no "
                                          r"live executor \(squall show word_count\)$"):
        inspection.locate_task(state, "word_count", 2)
    with pytest.raises(SquallError, match=r"^--flame 0: give a number of seconds above 0$"):
        inspection.profile(state, "word_count", 3, "flame", 0)


def test_a_debug_server_that_does_not_answer_is_named(state, records):
    with pytest.raises(inspection.DebugServerUnreachable,
                       match=rf"^container 1's debug server at {records} did not answer: .*refused"):
        inspection.profile(state, "word_count", 3, "stacks")
    found = inspection.search_logs(state, "word_count", "boom")
    assert found["matches"] == [] and len(found["unreachable"]) == 1
    assert inspection.search_notes(found) == found["unreachable"]
