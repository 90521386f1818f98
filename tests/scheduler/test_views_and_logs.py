"""``scheduler/views.py`` and ``scheduler/logs.py`` on a real local state manager and real files (no process runs)."""
import io

import pytest
from scheduler_plans import recorded

from squall.errors import SquallError
from squall.idl import schema
from squall.scheduler import logs, views
from squall.state import Kind


def test_list_and_show_read_the_records(state, tmp_path):
    recorded(state, str(tmp_path))
    state.put(Kind.CONTAINER, "word_count/1", schema.ContainerStatus(
        container=1, host="h1", executor_pid=11, updated=0.0, processes=[
            schema.ProcessStatus(name="instance-3-sentence", pid=12, restarts=2, crashes=2, log_file="/l/1.log"),
            schema.ProcessStatus(name="stmgr", pid=0, restarts=0, crashes=0, log_file="/l/s.log")]))
    [row] = views.list_data(state)
    assert (row["name"], row["cluster"], row["containers"], row["instances"]) == ("word_count", "local", 2, 5)
    assert row["reason"] == row["reasons"][0].splitlines()[0]  # no executor runs: it says so
    assert views.list_text([row]).splitlines()[0].split() == [
        "name", "status", "cluster", "containers", "instances", "run_id", "uptime_secs", "reason"]
    data = views.show_data(state, "word_count")
    assert data["errors"] is None  # no topology master to ask
    assert data["processes"] == [
        {"container": 1, "process": "executor", "host": "h1", "port": None, "pid": 11, "state": "up", "restarts": 0},
        {"container": 1, "process": "instance sentence[0] task 3", "host": "h1", "port": None, "pid": 12,
         "state": "up", "restarts": 2},
        {"container": 1, "process": "stmgr", "host": "h1", "port": None, "pid": None, "state": "restarting",
         "restarts": 0}]
    text = views.show_text(data)
    assert text.startswith(f"topology 'word_count': {data['status']}  (run folder {tmp_path})")
    assert "errors in user code: unknown (its topology master did not answer)" in text
    assert views.list_text([]) == "no topology is running"


@pytest.fixture
def run_dir(tmp_path):
    for container, names in ((1, ["instance-1-sentence+3-split", "stmgr"]), (2, ["instance-2-count"])):
        folder = tmp_path / "logs" / f"container-{container}"
        folder.mkdir(parents=True)
        for name in names:
            (folder / f"{name}.log").write_text(f"{name} line\n")
    return tmp_path


def test_select_logs_finds_a_chained_task_in_its_chain_log(run_dir):
    chain = str(run_dir / "logs" / "container-1" / "instance-1-sentence+3-split.log")
    assert logs.select_logs(str(run_dir), component="split") == [chain]
    assert logs.select_logs(str(run_dir), task=1) == [chain]
    assert logs.select_logs(str(run_dir), component="split", task=1) == []
    assert len(logs.select_logs(str(run_dir))) == 3


def test_no_matching_log_is_a_user_error(run_dir):
    with pytest.raises(SquallError, match=r"no log in .*/logs matches component 'nope' task 9"):
        logs.local_logs("word_count", str(run_dir), "nope", 9)


def test_print_logs_prints_each_file_under_its_name(run_dir):
    files = logs.select_logs(str(run_dir), component="count")
    out = io.StringIO()
    logs.print_logs(files, out, follow=False)
    assert out.getvalue() == f"==> {files[0]} <==\ninstance-2-count line\n"
