"""Where a topology's state lives: one value that every command and process resolves the same way.

A ``StateAddress`` is made from the configuration (``squall.state.*``) at
submit and written, mode 0600, into the run folder as ``state.json``. The
scheduler starts every executor with ``--state <that file>``, so all the
processes of a topology open the same state manager as the command that
submitted it, credential included, without the credential appearing on a
command line or in an environment.
"""
from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from typing import Mapping

from squall.state.base import StateError, StateManager

MANAGERS = ("local", "zookeeper")


def squall_home() -> str:
    """``$SQUALL_HOME``, by default ``~/.squall``."""
    return os.path.abspath(os.path.expanduser(os.environ.get("SQUALL_HOME") or "~/.squall"))


@dataclass(frozen=True)
class StateAddress:
    manager: str  # local | zookeeper
    root: str  # a directory (local) or a znode path (zookeeper)
    connect: str = ""  # ZooKeeper connection string
    auth: str = ""  # ZooKeeper digest credential, user:password
    session_timeout: float = 10.0  # ZooKeeper session timeout, seconds

    @classmethod
    def from_config(cls, config: Mapping[str, object]) -> "StateAddress":
        manager = config["squall.state.manager"]
        root = config["squall.state.root"]
        if manager == "local":
            return cls("local", os.path.abspath(os.path.expanduser(root or os.path.join(squall_home(), "state"))))
        if manager == "zookeeper":
            auth = config["squall.state.zookeeper.auth"]
            if not auth:
                raise StateError(
                    "squall.state.zookeeper.auth is not set: the zookeeper state manager keeps every topology "
                    "record behind a digest ACL; set it to user:password in the cluster config (--config-path)")
            if ":" not in auth:
                raise StateError("squall.state.zookeeper.auth: expected user:password")
            return cls("zookeeper", "/" + (root or "/squall").strip("/"), config["squall.state.zookeeper.connect"],
                       auth, float(config["squall.state.zookeeper.session.timeout.secs"]))
        raise StateError(f"squall.state.manager: unknown state manager {manager!r} (known: {', '.join(MANAGERS)})")

    def open(self) -> StateManager:
        """The state manager at this address (not started)."""
        if self.manager == "local":
            from squall.state.local import LocalStateManager

            return LocalStateManager(self.root)
        from squall.state.zookeeper import ZooKeeperStateManager

        return ZooKeeperStateManager(self.connect, self.root, session_timeout=self.session_timeout, auth=self.auth)

    def describe(self) -> str:
        """Where, for messages (never the credential)."""
        return self.root if self.manager == "local" else f"zookeeper {self.connect}{self.root}"

    def write(self, path: str) -> None:
        """Write the address to ``path``, readable by its owner only."""
        tmp = f"{path}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(asdict(self), f)
        os.replace(tmp, path)

    @classmethod
    def read(cls, path: str) -> "StateAddress":
        try:
            with open(path) as f:
                data = json.load(f)
            return cls(**data)
        except (OSError, ValueError, TypeError) as e:
            raise StateError(f"state address file {path} is unreadable: {e}") from e
