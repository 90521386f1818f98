"""State managers: where topology plans and locations live (local directory or ZooKeeper)."""
from __future__ import annotations

from typing import Mapping, Optional

from squall.state.address import StateAddress, squall_home
from squall.state.base import AlreadyExists, Election, Kind, Session, StateError, StateManager, StorageError, member
from squall.state.local import LocalStateManager


def make_state_manager(config: Mapping[str, object]) -> StateManager:
    """The state manager ``squall.state.*`` names (not started)."""
    return StateAddress.from_config(config).open()


def open_state_manager(config_path: Optional[str] = None) -> StateManager:
    """The started state manager of the configuration (defaults < site file < ``config_path``)."""
    from squall.conf import base_config

    state = make_state_manager(base_config(config_path))
    state.start()
    return state


__all__ = [
    "AlreadyExists",
    "Election",
    "Kind",
    "LocalStateManager",
    "Session",
    "StateAddress",
    "StateError",
    "StateManager",
    "StorageError",
    "make_state_manager",
    "member",
    "open_state_manager",
    "squall_home",
]
