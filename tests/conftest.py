"""Fixtures every suite may use: a real ZooKeeper server on a free loopback port, one per test session."""
import pytest

from squall.state.zkserver import ZooKeeperServer


@pytest.fixture(scope="session")
def zookeeper():
    server = ZooKeeperServer()
    server.start()
    yield server
    server.close()
