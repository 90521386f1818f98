"""The ZooKeeper state manager (kazoo), for topologies on a cluster.

Records are znodes ``<root>/<kind>/<name>`` holding the Thrift compact
encoding; ``tmasters`` and ``locks`` records are ephemeral znodes, gone when
the session of the process that created them ends. Connection states follow
kazoo: SUSPENDED is logged and waited out, LOST means every ephemeral record
of this manager is gone (the owner must recreate what it needs).
"""
from __future__ import annotations

import logging
import threading
from typing import Any, Callable

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import KazooException, NodeExistsError, NoNodeError
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.retry import KazooRetry

from squall.state.base import (
    AlreadyExists,
    Kind,
    StateError,
    StateManager,
    check_name,
    decode_record,
    encode_record,
)

log = logging.getLogger(__name__)


class ZooKeeperStateManager(StateManager):
    def __init__(
        self, hosts: str, root: str = "/squall", connect_timeout: float = 10.0, session_timeout: float = 10.0
    ):
        self.hosts = hosts
        self.root = "/" + root.strip("/") if root.strip("/") else "/squall"
        self.connect_timeout = connect_timeout
        self.client = KazooClient(
            hosts=hosts,
            timeout=session_timeout,
            connection_retry=KazooRetry(max_tries=-1, max_delay=2.0),
            command_retry=KazooRetry(max_tries=5, deadline=connect_timeout, max_delay=1.0),
        )
        self.client.add_listener(self._on_state)
        self._started = False

    def _on_state(self, state: str) -> None:
        if state == KazooState.SUSPENDED:
            log.warning("ZooKeeper connection to %s suspended", self.hosts)
        elif state == KazooState.LOST:
            log.error("ZooKeeper session with %s lost: its ephemeral records are gone", self.hosts)
        else:
            log.info("ZooKeeper connection to %s is up", self.hosts)

    def start(self) -> None:
        if self._started:
            return
        try:
            self.client.start(timeout=self.connect_timeout)
        except KazooTimeoutError as e:
            self.client.stop()
            raise StateError(
                f"cannot connect to ZooKeeper at {self.hosts} within {self.connect_timeout:g}s"
            ) from e
        self._started = True
        for kind in Kind:
            self._call(self.client.ensure_path, self._dir(kind))

    def close(self) -> None:
        if self._started:
            self._started = False
            self.client.stop()
            self.client.close()

    def _dir(self, kind: Kind) -> str:
        return f"{self.root}/{kind.value}"

    def _path(self, kind: Kind, name: str) -> str:
        return f"{self._dir(kind)}/{check_name(name)}"

    def _call(self, func: Callable, *args: Any, **kwargs: Any) -> Any:
        try:
            return self.client.retry(func, *args, **kwargs)
        except (NodeExistsError, NoNodeError):
            raise
        except KazooException as e:
            raise StateError(f"ZooKeeper at {self.hosts}: {func.__name__} {args[0]} failed: {e!r}") from e

    def create(self, kind: Kind, name: str, value: Any) -> None:
        path = self._path(kind, name)
        try:
            self._call(self.client.create, path, encode_record(kind, value), ephemeral=kind.ephemeral, makepath=True)
        except NodeExistsError:
            raise AlreadyExists(f"state record {path} already exists") from None

    def put(self, kind: Kind, name: str, value: Any) -> None:
        path, data = self._path(kind, name), encode_record(kind, value)
        try:
            self._call(self.client.set, path, data)
        except NoNodeError:
            try:
                self._call(self.client.create, path, data, ephemeral=kind.ephemeral, makepath=True)
            except NodeExistsError:  # created in between: last writer wins
                self._call(self.client.set, path, data)

    def get(self, kind: Kind, name: str) -> Any:
        path = self._path(kind, name)
        try:
            data, _ = self._call(self.client.get, path)
        except NoNodeError:
            return None
        return decode_record(kind, path, data)

    def delete(self, kind: Kind, name: str) -> None:
        try:
            self._call(self.client.delete, self._path(kind, name))
        except NoNodeError:
            pass

    def names(self, kind: Kind) -> list:
        try:
            return sorted(self._call(self.client.get_children, self._dir(kind)))
        except NoNodeError:
            return []

    def watch(self, kind: Kind, name: str, callback: Callable[[Any], None]) -> Callable[[], None]:
        path = self._path(kind, name)
        cancelled = threading.Event()
        first = [True]

        def on_change(data: Any, stat: Any) -> Any:
            if cancelled.is_set():
                return False  # tells kazoo to drop the watch
            if first[0]:  # kazoo calls once at registration; report changes only
                first[0] = False
                return None
            try:
                callback(None if data is None else decode_record(kind, path, data))
            except Exception:
                log.exception("state watch callback for %s failed", path)
            return None

        self.client.DataWatch(path, on_change)
        return cancelled.set
