"""Each state test's manager(s): local, and ZooKeeper on the session's real server (tests/conftest.py)."""
import uuid

import pytest

from state_helpers import make_manager


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
