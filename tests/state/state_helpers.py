"""What the state tests share (and what their child processes import)."""

from squall.state import LocalStateManager
from squall.state.zookeeper import ZooKeeperStateManager

AUTH = "squall:test-credential"


def make_manager(kind, tmp_path, zookeeper_hosts, root):
    if kind == "local":
        return LocalStateManager(str(tmp_path / "state"), poll_interval=0.05)
    return ZooKeeperStateManager(zookeeper_hosts, root, session_timeout=2.0, auth=AUTH)

