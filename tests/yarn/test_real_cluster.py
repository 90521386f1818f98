"""Word count on a real YARN cluster: submit, update, restart a container, kill.

Runs only where a cluster is reachable: ``HADOOP_CONF_DIR`` set, ``yarn`` on
PATH, and ``SQUALL_YARN_TEST_CONFIG`` naming a Squall cluster file whose
ZooKeeper the cluster's nodes can reach and which sets ``squall.yarn.python``
or ``squall.yarn.environment`` and ``squall.runtime.bind.host: 0.0.0.0``.
The count files are written on the nodes' disks, so exact counts are checked
by the emulated suite (test_emulated.py), not here.
"""
import os
import shutil

import pytest

from squall.cli import main
from squall.state import Kind, open_state_manager
from squall.state.status import topology_health

from e2e_harness import TOPOLOGIES, wait_until

CONFIG = os.environ.get("SQUALL_YARN_TEST_CONFIG", "")
MISSING = [what for what, ok in (("HADOOP_CONF_DIR is not set", os.environ.get("HADOOP_CONF_DIR")),
                                 ("`yarn` is not on PATH", shutil.which("yarn")),
                                 ("SQUALL_YARN_TEST_CONFIG names no cluster file", os.path.isfile(CONFIG)))
           if not ok]
pytestmark = pytest.mark.skipif(bool(MISSING), reason="no YARN cluster: " + "; ".join(MISSING))


def squall(capsys, *argv):
    code = main(list(argv) + ["--config-path", CONFIG])
    out, err = capsys.readouterr()
    assert code == 0, f"squall {' '.join(argv)} exited {code}:\n{out}\n{err}"
    return out


def test_word_count_on_yarn(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SQUALL_HOME", str(tmp_path / "home"))
    squall(capsys, "submit", os.path.join(TOPOLOGIES, "wc_update.py"), "--cluster", "yarn",
           "--config-property", "e2e.out.dir=/tmp", "--config-property", "squall.submit.timeout.secs=300")
    with open_state_manager(CONFIG) as state:
        app_id = state.get(Kind.SCHEDULER, "wc_update").application_id
        assert app_id.startswith("application_")
        assert app_id in squall(capsys, "show", "wc_update")

        squall(capsys, "update", "wc_update", "--component-parallelism", "count=3")
        physical = state.get(Kind.PHYSICAL_PLAN, "wc_update")
        assert sorted(i.id.component_index for i in physical.instances if i.id.component == "count") == [0, 1, 2]

        before = state.get(Kind.CONTAINER, "wc_update/1").yarn_container
        squall(capsys, "restart", "wc_update", "--container", "1")
        assert state.get(Kind.CONTAINER, "wc_update/1").yarn_container != before
        assert topology_health(state, "wc_update").up

        squall(capsys, "kill", "wc_update")
        assert state.get(Kind.EXECUTION_STATE, "wc_update") is None

    from squall.conf import base_config
    from squall.yarn.client import rm_client

    rm = rm_client(base_config(CONFIG))
    wait_until(lambda: rm.app(app_id).state in ("FINISHED", "KILLED", "FAILED"), timeout=120,
               what=f"application {app_id} to end")
