"""A topology that does not come up: submit kills what it started and names the failing process."""
import os

from squall.cli import main
from squall.state import Kind, LocalStateManager

from e2e_harness import TOPOLOGIES


def test_submit_gives_up_cleans_up_and_names_the_process(cluster, capsys):
    code = main(["submit", os.path.join(TOPOLOGIES, "never_up.py"),
                 "--config-property", "squall.submit.timeout.secs=6"])
    _, err = capsys.readouterr()
    assert code == 2
    assert "squall: error: topology 'never_up' did not come up in 6s" in err
    assert "instance-1-broken.log failed" in err
    assert "RuntimeError: planted: cannot reach the source system" in err
    assert cluster.processes() == []
    state = LocalStateManager(os.path.join(cluster.home, "state"))
    assert all(state.get(kind, "never_up") is None for kind in Kind)
    listed, _ = cluster.squall("list")
    assert listed.strip() == "no topology is running"


def test_ctrl_c_during_submit_leaves_nothing_running(cluster):
    import signal
    import subprocess
    import sys
    import time

    squall = os.path.join(os.path.dirname(sys.executable), "squall")
    submit = subprocess.Popen(
        [squall, "submit", os.path.join(TOPOLOGIES, "never_up.py"), "--config-property", "squall.submit.timeout.secs=60"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    deadline = time.monotonic() + 30
    while not cluster.processes() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert cluster.processes(), "submit started nothing"
    time.sleep(1.0)
    submit.send_signal(signal.SIGINT)
    assert submit.wait(timeout=60) == 130
    assert cluster.processes() == []
    state = LocalStateManager(os.path.join(cluster.home, "state"))
    assert all(state.get(kind, "never_up") is None for kind in Kind)
