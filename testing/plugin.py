"""Squall's pytest plugin (registered with pytest when Squall is installed): fixtures for testing topologies.

- ``squall_cluster``: a started ``LocalCluster`` with local state in the test's temporary folder; every
  topology it submitted is killed after the test;
- ``squall_zookeeper``: a real ZooKeeper server on a free loopback port, one per test session (Debian's
  ``zookeeper`` package, or ``ZOOKEEPER_HOME``; the test is skipped, saying why, without one);
- ``squall_zk_cluster``: a ``LocalCluster`` whose state is in that ZooKeeper, as on a shared cluster.
"""
from __future__ import annotations

import uuid
from typing import Iterator

import pytest

from squall.testing.cluster import LocalCluster


@pytest.fixture
def squall_cluster(tmp_path) -> Iterator[LocalCluster]:
    with LocalCluster(home=str(tmp_path / "squall-home")) as cluster:
        yield cluster


@pytest.fixture(scope="session")
def squall_zookeeper() -> Iterator[object]:
    from squall.state.zkserver import ZooKeeperServer, ZooKeeperUnavailable

    try:
        server = ZooKeeperServer()
        server.start()
    except ZooKeeperUnavailable as e:
        pytest.skip(f"no ZooKeeper server to start: {e}")
    yield server
    server.close()


@pytest.fixture
def squall_zk_cluster(tmp_path, squall_zookeeper) -> Iterator[LocalCluster]:
    config = tmp_path / "cluster.yaml"
    config.write_text(f"squall.state.manager: zookeeper\n"
                      f"squall.state.zookeeper.connect: '{squall_zookeeper.hosts}'\n"
                      f"squall.state.root: '/squall-{uuid.uuid4().hex[:8]}'\n"
                      f"squall.state.zookeeper.auth: 'squall:{uuid.uuid4().hex}'\n")
    with LocalCluster(home=str(tmp_path / "squall-home"), config_path=str(config)) as cluster:
        yield cluster
