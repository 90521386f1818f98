"""A real ZooKeeper server for the state tests, started once per session; each test's manager(s)."""
import uuid

import pytest

from squall.state.zkserver import ZooKeeperServer

from state_helpers import make_manager


@pytest.fixture(scope="session")
def zookeeper():
    server = ZooKeeperServer()
    server.start()
    yield server
    server.close()


@pytest.fixture(params=["local", "zookeeper"])
def manager_args(request, tmp_path):
    hosts = request.getfixturevalue("zookeeper").hosts if request.param == "zookeeper" else None
    return request.param, tmp_path, hosts, f"/squall-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def state(manager_args):
    s = make_manager(*manager_args)
    s.start()
    yield s
    s.close()
