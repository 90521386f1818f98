"""Fixtures every suite may use, one per test session: a real ZooKeeper server on a free loopback port, and a
real local Spark session (the reports, and what the file connectors write)."""
import os

import pytest

from squall.state.zkserver import ZooKeeperServer


@pytest.fixture(scope="session")
def zookeeper():
    """Strict: Squall's own tests fail, rather than skip, without the server the project installs
    (squall.testing's ``squall_zookeeper`` skips, for users' machines)."""
    server = ZooKeeperServer()
    server.start()
    yield server
    server.close()


@pytest.fixture(scope="session")
def spark():
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    from squall.reports.session import spark_session

    session = spark_session("local[2]", app_name="squall-tests", driver_memory="1g")
    session.conf.set("spark.sql.shuffle.partitions", "2")
    yield session
    session.stop()
