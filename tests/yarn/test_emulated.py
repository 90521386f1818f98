"""A topology submitted with --spec-out, run as YARN and Skein would run its spec (tests/yarn/emulator.py),
with its state in a real ZooKeeper: it comes up and counts exactly, a SIGKILLed container comes back and
claims its id again, and kill stops every container and ends the application."""
import json
import os
import shutil
import sys
import uuid

import pytest

from squall.cli import main
from squall.state import Kind, member, open_state_manager
from squall.state.status import topology_health

from corpus import expected
from e2e_harness import TOPOLOGIES, summed_counts, wait_until
from emulator import EmulatedApplication, group_alive

SENTENCES = 300


@pytest.fixture
def yarn_cluster(tmp_path, monkeypatch, zookeeper, capsys):
    monkeypatch.setenv("SQUALL_HOME", str(tmp_path / "home"))
    config = tmp_path / "cluster.yaml"
    config.write_text(
        "squall.state.manager: zookeeper\n"
        f"squall.state.zookeeper.connect: '{zookeeper.hosts}'\n"
        f"squall.state.root: '/squall-{uuid.uuid4().hex[:8]}'\n"
        "squall.state.zookeeper.auth: 'squall:yarn-e2e'\n"
        "squall.state.zookeeper.session.timeout.secs: 4\n"
        "squall.runtime.bind.host: 0.0.0.0\n"
        f"squall.yarn.python: {sys.executable}\n"
        "squall.yarn.min.allocation.mb: 256\n"
        "squall.executor.claim.wait.secs: 20\n")
    apps = []

    def squall(*argv, expect=0):
        code = main(list(argv) + ["--config-path", str(config)])
        out, err = capsys.readouterr()
        assert code == expect, f"squall {' '.join(argv)} exited {code}:\n{out}\n{err}"
        return out

    sys.modules.pop("wc_update", None)  # loaded from a copy here: other tests load it from its own folder
    yield squall, str(config), apps
    sys.modules.pop("wc_update", None)
    for app in apps:
        app.close()
        leftovers = [c.yarn_id for c in app.containers if group_alive(c.popen)]
        assert not leftovers, f"containers left running: {leftovers}"


def test_spec_out_runs_exactly_relaunches_and_kills(yarn_cluster, tmp_path):
    squall, config, apps = yarn_cluster
    # the topology's folder exists only at submit, as on a cluster: containers get the shipped copy
    source = tmp_path / "source"
    shutil.copytree(TOPOLOGIES, source)
    out = tmp_path / "out"
    out.mkdir()
    spec = tmp_path / "wc.yaml"
    printed = squall("submit", str(source / "wc_update.py"), "--cluster", "yarn", "--spec-out", str(spec),
                     "--config-property", f"e2e.out.dir={out}", "--config-property", f"e2e.sentences={SENTENCES}")
    assert f"skein application submit {spec}" in printed
    shutil.rmtree(source)

    with open_state_manager(config) as state:
        assert topology_health(state, "wc_update").status == "SUBMITTED"
        location = state.get(Kind.SCHEDULER, "wc_update")
        assert not location.application_id and set(location.services) == {0, 1, 2}

        app = EmulatedApplication(str(spec), str(tmp_path / "yarn"))
        apps.append(app)
        app.start()
        plan = state.get(Kind.PACKING_PLAN, "wc_update")
        total = sum(len(c.instances) for c in plan.containers)

        def up():
            physical = state.get(Kind.PHYSICAL_PLAN, "wc_update")
            return topology_health(state, "wc_update").up and physical is not None \
                and physical.packing_plan_id == plan.id and len(physical.instances) == total
        wait_until(up, timeout=90, what="the topology to come up in the emulated containers")
        assert state.get(Kind.SCHEDULER, "wc_update").application_id == app.app_id
        wait_until(lambda: summed_counts(str(out)) == expected(SENTENCES), timeout=60, what="exact word counts")

        # every container id is held by one YARN container, logging into that container's log folder
        records = {cid: state.get(Kind.CONTAINER, member("wc_update", cid)) for cid in (0, 1, 2)}
        assert len({r.yarn_container for r in records.values()}) == 3
        for r in records.values():
            log_dir = app.find(r.yarn_container).log_dir
            assert all(os.path.dirname(p.log_file) == log_dir for p in r.processes)
        # each container's debug server, found through its record, searches its own YARN log folder
        found = json.loads(squall("logs", "wc_update", "--grep", "debug server of container", "--json"))
        assert sorted(m["container"] for m in found["matches"]) == [0, 1, 2]
        assert all(os.path.dirname(m["file"]) == app.find(records[m["container"]].yarn_container).log_dir
                   and m["host"] == records[m["container"]].host for m in found["matches"])
        metrics = os.path.join(app.find(records[1].yarn_container).log_dir, "container-1.jsonl")
        wait_until(lambda: os.path.exists(metrics), timeout=30, what="metrics in the container's log folder")

        # a SIGKILLed container is relaunched (new YARN container) and claims its id again
        app.sigkill(records[1].yarn_container)

        def reclaimed():
            r = state.get(Kind.CONTAINER, member("wc_update", 1))
            return r is not None and r.yarn_container != records[1].yarn_container and r.processes and up()
        wait_until(reclaimed, timeout=90, what="container 1 to come back in a new YARN container")
        again = state.get(Kind.CONTAINER, member("wc_update", 1))
        assert app.find(again.yarn_container).service == app.find(records[1].yarn_container).service
        assert app.find(again.yarn_container).instance > app.find(records[1].yarn_container).instance

    # kill without a reachable YARN (no `yarn` here): the state goes, every container stops by itself
    squall("kill", "wc_update")
    wait_until(app.finished, timeout=60, what="every container and the driver to exit")
    assert app.final_status == "SUCCEEDED"
    # a container's shell exits first; what it started may still be on its way out (seen under load)
    wait_until(lambda: not [c.yarn_id for c in app.containers if group_alive(c.popen)], timeout=30,
               what="every process of every container to exit")


def test_a_crash_looping_container_fails_the_topology_and_ends_the_application(yarn_cluster, tmp_path):
    squall, config, apps = yarn_cluster
    out = tmp_path / "out"
    out.mkdir()
    spec = tmp_path / "wc.yaml"
    squall("submit", os.path.join(TOPOLOGIES, "wc_update.py"), "--cluster", "yarn", "--spec-out", str(spec),
           "--config-property", f"e2e.out.dir={out}", "--config-property", "squall.restart.max=1")
    app = EmulatedApplication(str(spec), str(tmp_path / "yarn"))
    apps.append(app)
    app.start()
    with open_state_manager(config) as state:
        def holder():
            r = state.get(Kind.CONTAINER, member("wc_update", 2))
            return r.yarn_container if r is not None and r.processes else None
        first = wait_until(holder, timeout=60, what="container 2 to start")
        app.sigkill(first)  # one restart is within the budget
        second = wait_until(lambda: holder() not in (None, first) and holder(), timeout=60,
                            what="container 2 to come back")
        app.sigkill(second)  # one too many: the driver fails the topology and ends the application
        wait_until(app.finished, timeout=60, what="the application to end")
        assert app.final_status == "FAILED"
        health = topology_health(state, "wc_update")
        assert health.status == "FAILED"
        assert "container 2 exited 2 times" in health.reasons[0] and "past its restart budget" in health.reasons[0]
    squall("kill", "wc_update")
