"""State managers: where topology plans and locations live (local directory or ZooKeeper)."""
from __future__ import annotations

import os
from typing import Any, Mapping, Optional

from squall.state.base import AlreadyExists, Kind, StateError, StateManager
from squall.state.local import LocalStateManager


def squall_home() -> str:
    """``$SQUALL_HOME``, by default ``~/.squall``."""
    return os.path.abspath(os.path.expanduser(os.environ.get("SQUALL_HOME") or "~/.squall"))


def make_state_manager(config: Mapping[str, Any]) -> StateManager:
    """The state manager ``squall.state.manager`` names (not started)."""
    kind = config["squall.state.manager"]
    root = config["squall.state.root"]
    if kind == "local":
        return LocalStateManager(root or os.path.join(squall_home(), "state"))
    if kind == "zookeeper":
        from squall.state.zookeeper import ZooKeeperStateManager

        return ZooKeeperStateManager(config["squall.state.zookeeper.connect"], root or "/squall")
    raise StateError(f"squall.state.manager: unknown state manager {kind!r}")


def open_state_manager(config_path: Optional[str] = None) -> StateManager:
    """The started state manager of the configuration (defaults < site file < ``config_path``)."""
    from squall.conf import base_config

    state = make_state_manager(base_config(config_path))
    state.start()
    return state


__all__ = [
    "AlreadyExists",
    "Kind",
    "LocalStateManager",
    "StateError",
    "StateManager",
    "make_state_manager",
    "open_state_manager",
    "squall_home",
]
