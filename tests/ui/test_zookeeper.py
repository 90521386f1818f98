"""``squall ui`` on ZooKeeper state (a real server on a free loopback port): it reads the topology, its
master's figures, and its actions change it, up to a kill."""
import uuid

import pytest

from ui_harness import TOPOLOGY, Squall, wait_until


@pytest.fixture(scope="module")
def on_zookeeper(tmp_path_factory, zookeeper):
    home = tmp_path_factory.mktemp("ui-zk")
    config = home / "cluster.yaml"
    config.write_text(f"squall.state.manager: zookeeper\nsquall.state.zookeeper.connect: '{zookeeper.hosts}'\n"
                      f"squall.state.root: '/squall-ui-{uuid.uuid4().hex[:8]}'\n"
                      "squall.state.zookeeper.auth: 'squall:ui-test'\n"
                      "squall.state.zookeeper.session.timeout.secs: 4\n")
    squall = Squall(home, str(config))
    squall.run("submit", TOPOLOGY, "--config-property", "ui.boom.every=0")
    squall.start_ui()
    yield squall
    squall.finish()


def test_the_ui_reads_zookeeper_state_and_acts_on_it(on_zookeeper):
    ui = on_zookeeper
    rows = ui.get("/api/v1/topology/summary")["topologies"]
    assert [(r["name"], r["status"], r["instances"]) for r in rows] == [("ui_words", "RUNNING", 5)]
    t = wait_until(lambda: (lambda t: t if all(c["metrics"] for c in t["components"]) else None)(
        ui.get("/api/v1/topology/ui_words?window=60s")), timeout=60, what="figures of every component")
    assert t["errors"] == [] and t["components"][1]["metrics"]["execute_rate"] > 0
    assert "ui_words" in ui.get("/topology/ui_words")  # the page too

    assert ui.post("/api/v1/topology/ui_words/deactivate")["message"] == "topology 'ui_words' is deactivated"
    assert ui.get("/api/v1/topology/ui_words")["status"] == "PAUSED"
    assert ui.post("/api/v1/topology/ui_words/activate")["message"] == "topology 'ui_words' is active"
    done = ui.post("/api/v1/topology/ui_words/kill")["message"]
    assert done.startswith("killed topology 'ui_words'; its logs and metrics stay in ")
    assert ui.get("/api/v1/topology/summary")["topologies"] == []
    assert ui.get("/api/v1/topology/ui_words", expect=404)["error"] == \
        "no topology named 'ui_words' is running (none is running)"
    wait_until(lambda: [p for p in ui.processes() if p.pid != ui.ui.pid] == [], timeout=30,
               what="the topology's processes to end")
