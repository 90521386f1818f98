"""What the state tests share (and what their child processes import)."""
import time

from squall.state import LocalStateManager
from squall.state.zookeeper import ZooKeeperStateManager

AUTH = "squall:test-credential"


def make_manager(kind, tmp_path, zookeeper_hosts, root):
    if kind == "local":
        return LocalStateManager(str(tmp_path / "state"), poll_interval=0.05)
    return ZooKeeperStateManager(zookeeper_hosts, root, session_timeout=2.0, auth=AUTH)


def wait_for(predicate, timeout=15.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return predicate()
