"""A topology that does not come up: submit kills what it started and names the failing process."""
import glob
import os

import pytest

from squall.cli import main
from squall.state import LocalStateManager

from e2e_harness import TOPOLOGIES, records_left, wait_until


def crashed_once(cluster):
    """never_up's instance has raised once (its traceback is in its log): the executor's backoff has begun."""
    logs = glob.glob(os.path.join(cluster.home, "topologies", "never_up", "*", "logs", "container-1",
                                  "instance-*-broken.log"))
    return any("planted: cannot reach the source system" in open(path, errors="replace").read() for path in logs)


def test_a_crash_looping_instance_fails_submit_at_once_with_its_traceback(cluster, capsys):
    # the timeout is a minute: the submit must fail on the second crash, not wait for it
    code = main(["submit", os.path.join(TOPOLOGIES, "never_up.py"),
                 "--config-property", "squall.submit.timeout.secs=60"])
    _, err = capsys.readouterr()
    assert code == 2
    assert ("squall: error: topology 'never_up' did not come up: container 1's instance-1-broken exited 2 times "
            "(last exit status 1); the end of its log (") in err
    assert "instance-1-broken.log):\n" in err
    assert 'raise RuntimeError("planted: cannot reach the source system")' in err
    assert err.rstrip().endswith("RuntimeError: planted: cannot reach the source system")
    assert cluster.processes() == []
    state = LocalStateManager(os.path.join(cluster.home, "state"))
    assert records_left(state, "never_up") == []
    listed, _ = cluster.squall("list")
    assert listed.strip() == "no topology is running"


@pytest.mark.parametrize("signum,status", [("SIGINT", 130), ("SIGTERM", 130)])
def test_interrupted_submit_leaves_nothing_running(cluster, signum, status):
    import signal
    import subprocess
    import sys

    squall = os.path.join(os.path.dirname(sys.executable), "squall")
    submit = subprocess.Popen(
        [squall, "submit", os.path.join(TOPOLOGIES, "never_up.py"), "--config-property", "squall.submit.timeout.secs=60",
         "--config-property", "squall.restart.backoff.secs=30"],  # one crash, then a long wait: interrupt it
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        # a user's Ctrl-C: SIGINT as a terminal leaves it, even when the tests run as a background job (a
        # non-interactive shell's `cmd &` ignores SIGINT, and Python then installs no KeyboardInterrupt)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    wait_until(lambda: cluster.processes(), timeout=30, what="submit to start the topology's processes")
    wait_until(lambda: crashed_once(cluster), timeout=30, what="the instance's first crash (then a 30 s backoff)")
    submit.send_signal(getattr(signal, signum))
    code = submit.wait(timeout=60)
    assert code == status, f"submit exited {code}: {submit.stderr.read()}"  # the why, should it ever differ
    assert cluster.processes() == []
    state = LocalStateManager(os.path.join(cluster.home, "state"))
    assert records_left(state, "never_up") == []
