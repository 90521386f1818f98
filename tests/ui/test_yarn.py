"""The UI on YARN: container 0's Skein service runs it (a real Skein spec), and in the emulated YARN of
tests/yarn (containers run as NodeManager and Skein would run them; no application master exists) it
serves the topology from container 0, says that it could not become a page of the Skein application, and
ends with its container when the topology is killed."""
import os
import re
import sys
import uuid

import pytest
import skein

from squall.conf import base_config
from squall.packing import pack
from squall.yarn.environment import PythonEnvironment
from squall.yarn.spec import TMASTER_SERVICE, UI_LOG, build_spec
from squall.yarn.staging import Staged

from ui_harness import TOPOLOGY, Squall, request, wait_until

from emulator import EmulatedApplication, group_alive
from packing_helpers import comp, topo

STAGED = Staged("/runs/t/1/state.json", "/runs/t/1/yarn/topology.tar.gz")
ENV = PythonEnvironment("/opt/squall/bin/python")
UI_LINE = ('/opt/squall/bin/python -m squall.ui.container --topology t --state "$PWD/state.json" '
           f'>> "$log_dir/{UI_LOG}" 2>&1 &')


@pytest.mark.parametrize("enabled", [True, False])
def test_container_zero_runs_the_ui_beside_its_executor(enabled):
    config = {**base_config(), "squall.ui.yarn": enabled}
    plan = pack(topo([comp("spout", 2), comp("bolt", 3, inputs=["spout"])], {"topology.workers": 2}))
    spec = skein.ApplicationSpec.from_yaml(build_spec("t", plan, config, STAGED, ENV).to_yaml())
    lines = spec.services[TMASTER_SERVICE].script.splitlines()
    executor = next(i for i, x in enumerate(lines) if x.startswith("exec "))
    if enabled:
        assert lines.index(UI_LINE) < executor  # started first, in the background; the executor is the container
    else:
        assert not [x for x in lines if "squall.ui" in x]
    for name, service in spec.services.items():
        if name != TMASTER_SERVICE:
            assert "squall.ui" not in service.script


def test_in_emulated_yarn_container_zero_serves_the_ui_until_the_topology_is_killed(tmp_path, zookeeper):
    config = tmp_path / "cluster.yaml"
    config.write_text(
        "squall.state.manager: zookeeper\n"
        f"squall.state.zookeeper.connect: '{zookeeper.hosts}'\n"
        f"squall.state.root: '/squall-ui-yarn-{uuid.uuid4().hex[:8]}'\n"
        "squall.state.zookeeper.auth: 'squall:ui-yarn'\n"
        "squall.state.zookeeper.session.timeout.secs: 4\n"
        "squall.runtime.bind.host: 0.0.0.0\n"
        f"squall.yarn.python: {sys.executable}\n"
        "squall.yarn.min.allocation.mb: 256\n"
        "squall.executor.claim.wait.secs: 20\n")
    squall = Squall(tmp_path / "home", str(config))
    spec = tmp_path / "ui_words.yaml"
    squall.run("submit", TOPOLOGY, "--cluster", "yarn", "--spec-out", str(spec), "--config-property",
               "ui.boom.every=0")
    app = EmulatedApplication(str(spec), str(tmp_path / "yarn"))
    app.start()
    try:
        zero = next(c for c in app.containers if c.service == TMASTER_SERVICE)
        log = os.path.join(zero.log_dir, UI_LOG)

        def served():
            text = open(log).read() if os.path.exists(log) else ""
            found = re.search(r"serving the UI of topology 'ui_words' at (http://\S+)", text)
            return (found.group(1), text) if found else None
        url, text = wait_until(served, timeout=60, what="container 0's UI to start")
        assert re.search(r"actions need the token: \S+", text)
        rows = wait_until(lambda: [r for r in request(url, "GET", "/api/v1/topology/summary")["topologies"]
                                   if r["status"] == "RUNNING"], timeout=90, what="the topology to run")
        assert [(r["name"], r["cluster"], r["instances"]) for r in rows] == [("ui_words", "yarn", 5)]
        assert "ui_words" in request(url, "GET", "/topology/ui_words")
        assert "is not a page of the Skein application" in open(log).read()  # no application master here

        squall.run("kill", "ui_words")
        wait_until(app.finished, timeout=60, what="every container and the driver to exit")
        assert not [c.yarn_id for c in app.containers if group_alive(c.popen)]
        assert "topology 'ui_words' is gone: stopping" in open(log).read()
    finally:
        app.close()
        squall.close()
