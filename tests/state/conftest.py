"""A real ZooKeeper server for the state tests, started once per session."""
import pytest

from squall.state.zkserver import ZooKeeperServer


@pytest.fixture(scope="session")
def zookeeper():
    server = ZooKeeperServer()
    server.start()
    yield server
    server.close()
