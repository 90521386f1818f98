"""The ZooKeeper state manager (kazoo), for topologies on a cluster.

Records are znodes ``<root>/<kind>/<name>`` holding the Thrift compact
encoding; ``tmasters``, ``locks`` and ``containers`` records are ephemeral
znodes, gone when the session of the process that created them ends.

Every znode this manager creates carries a digest ACL: only a client that
authenticates with the same ``user:password`` (``squall.state.zookeeper.auth``)
can read or write it, so the topology's secret in its execution state is
never readable without that credential.

Connection states follow kazoo: SUSPENDED (cut off, the session may still be
alive) and LOST (the session expired: its ephemeral records and any
leadership are gone) are passed to the listeners; their owners decide (the
topology master stops leading, an executor writes its record again).

No kazoo exception leaves this module: a failed operation is a ``StateError``
naming the server, the operation and the znode. Every operation is bounded
by ``connect_timeout``: kazoo queues a request made while the connection is
down until it is back, so a server that stays away would block its caller
for good (kazoo may still send it once the connection is back: a write that
timed out may have happened, as one that failed with connection loss).
"""
from __future__ import annotations

import logging
import threading
import time
from typing import Callable, List, Optional

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import CancelledError, KazooException, NodeExistsError, NoNodeError, NotEmptyError
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import ZnodeStat
from kazoo.recipe.lock import Lock
from kazoo.retry import KazooRetry
from kazoo.security import make_digest_acl

from squall.idl import schema
from squall.state.base import (
    ELECTIONS,
    AlreadyExists,
    Election,
    Kind,
    Session,
    StateError,
    StateManager,
    check_name,
    decode_record,
    encode_record,
)
from squall.state.decoded import DecodedRecords

log = logging.getLogger(__name__)

#: what kazoo raises: its own errors, and its threading handler's timeout (not a KazooException)
_KAZOO_ERRORS = (KazooException, KazooTimeoutError)

_SESSIONS = {KazooState.CONNECTED: Session.CONNECTED, KazooState.SUSPENDED: Session.SUSPENDED,
             KazooState.LOST: Session.LOST}


class ZooKeeperStateManager(StateManager):
    def __init__(self, hosts: str, root: str = "/squall", connect_timeout: float = 10.0,
                 session_timeout: float = 10.0, auth: str = ""):
        self.hosts = hosts
        self.root = "/" + root.strip("/") if root.strip("/") else "/squall"
        self.connect_timeout = connect_timeout
        self.session_timeout = session_timeout
        acl = None
        if auth:
            user, _, password = auth.partition(":")
            acl = [make_digest_acl(user, password, all=True)]
        self.client = KazooClient(
            hosts=hosts,
            timeout=session_timeout,
            connection_retry=KazooRetry(max_tries=-1, max_delay=2.0),
            command_retry=KazooRetry(max_tries=5, deadline=connect_timeout, max_delay=1.0),
            auth_data=[("digest", auth)] if auth else None,
            default_acl=acl,
        )
        self.session = Session.CONNECTED
        self._listeners: List[Callable[[Session], None]] = []
        self._started = False
        self._decoded = DecodedRecords()
        self.client.add_listener(self._on_state)

    def _on_state(self, state: str) -> None:
        """kazoo's connection thread: log, then tell the listeners (none may block)."""
        session = _SESSIONS[state]
        self.session = session
        if not self._started:  # closing: kazoo reports its own stop as LOST
            return
        if session is Session.SUSPENDED:
            log.warning("ZooKeeper connection to %s suspended", self.hosts)
        elif session is Session.LOST:
            log.error("ZooKeeper session with %s lost: its ephemeral records are gone", self.hosts)
        else:
            log.info("ZooKeeper connection to %s is up", self.hosts)
        for callback in list(self._listeners):
            try:
                callback(session)
            except Exception:
                log.exception("state session listener failed")

    def add_listener(self, callback: Callable[[Session], None]) -> None:
        self._listeners.append(callback)

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
        for folder in [kind.value for kind in Kind] + [ELECTIONS]:
            self._call("ensure_path", f"{self.root}/{folder}")

    def close(self) -> None:
        if self._started:
            self._started = False
            self.client.stop()
            self.client.close()

    def _dir(self, kind: Kind) -> str:
        return f"{self.root}/{kind.value}"

    def _path(self, kind: Kind, name: str) -> str:
        return f"{self._dir(kind)}/{check_name(name, kind)}"

    def _call(self, operation: str, path: str, *args: object, **kwargs: object) -> object:
        """kazoo's ``<operation>_async(path, ...)``, retried on connection loss, each attempt bounded by
        ``connect_timeout``; NodeExistsError, NoNodeError and NotEmptyError pass (callers decide), the rest
        of kazoo's errors become a StateError naming the operation and the znode."""
        start = getattr(self.client, f"{operation}_async")
        try:
            return self.client.retry(lambda: start(path, *args, **kwargs).get(timeout=self.connect_timeout))
        except (NodeExistsError, NoNodeError, NotEmptyError):
            raise
        except KazooTimeoutError as e:
            raise StateError(f"ZooKeeper at {self.hosts}: {operation} {path} had no answer within "
                             f"{self.connect_timeout:g}s (connection {self.session.value})") from e
        except KazooException as e:
            raise StateError(f"ZooKeeper at {self.hosts}: {operation} {path} failed: {e!r}") from e

    def _children(self, path: str) -> List[str]:
        try:
            return sorted(self._call("get_children", path))
        except NoNodeError:
            return []

    def _delete_tree(self, path: str, attempts: int = 3) -> None:
        """Delete ``path`` and everything under it (nothing when it is not there). A child created meanwhile
        (a live executor writing its container record again while its topology is killed) is deleted too,
        ``attempts`` times at most."""
        try:
            for child in self._call("get_children", path):
                self._delete_tree(f"{path}/{child}")
            self._call("delete", path)
        except NoNodeError:
            pass
        except NotEmptyError as e:
            if attempts <= 1:
                raise StateError(f"ZooKeeper at {self.hosts}: delete {path}: children keep being created "
                                 "under it") from e
            self._delete_tree(path, attempts - 1)

    def create(self, kind: Kind, name: str, value: object) -> None:
        path = self._path(kind, name)
        try:
            self._call("create", path, encode_record(kind, value), ephemeral=kind.ephemeral, makepath=True)
        except NodeExistsError:
            raise AlreadyExists(f"state record {path} already exists") from None

    def put(self, kind: Kind, name: str, value: object) -> None:
        path, data = self._path(kind, name), encode_record(kind, value)
        try:
            self._call("set", path, data)
        except NoNodeError:
            try:
                self._call("create", path, data, ephemeral=kind.ephemeral, makepath=True)
            except NodeExistsError:  # created in between: last writer wins
                self._call("set", path, data)

    def get(self, kind: Kind, name: str) -> object:
        path = self._path(kind, name)
        try:
            data, _ = self._call("get", path)
        except NoNodeError:
            return None
        return self._decoded.decode(kind, data, lambda: decode_record(kind, path, data))

    def container_records(self, topology: str) -> list[schema.ContainerStatus]:
        """As the base class's, with every record asked for at once (one round trip, not one per container)."""
        folder = f"{self._dir(Kind.CONTAINER)}/{check_name(topology)}"
        pending = [(f"{folder}/{m}", self.client.get_async(f"{folder}/{m}")) for m in self.members(Kind.CONTAINER,
                                                                                                   topology)]
        records = []
        for path, answer in pending:
            try:
                data, _ = answer.get(timeout=self.connect_timeout)
            except NoNodeError:  # gone between listing and reading
                continue
            except _KAZOO_ERRORS as e:  # connection trouble: the retried reads decide
                log.info("reading the container records of %s at once failed (%r): one by one", topology, e)
                return super().container_records(topology)
            records.append(self._decoded.decode(Kind.CONTAINER, data,
                                                lambda: decode_record(Kind.CONTAINER, path, data)))
        return sorted(records, key=lambda r: r.container)

    def delete(self, kind: Kind, name: str) -> None:
        try:
            self._call("delete", self._path(kind, name))
        except NoNodeError:
            pass
        except NotEmptyError as e:
            raise StateError(f"ZooKeeper at {self.hosts}: delete {self._path(kind, name)}: it has children") from e

    def names(self, kind: Kind) -> list:
        return self._children(self._dir(kind))

    def members(self, kind: Kind, topology: str) -> list:
        return self._children(f"{self._dir(kind)}/{check_name(topology)}")

    def exists(self, path: str) -> bool:
        """Whether the znode ``path`` is there (a StateError when the server does not answer)."""
        return self._call("exists", path) is not None

    def _delete_group(self, kind: Kind, topology: str) -> None:
        self._delete_tree(f"{self._dir(kind)}/{check_name(topology)}")

    def _delete_election(self, topology: str) -> None:
        self._delete_tree(f"{self.root}/{ELECTIONS}/{check_name(topology)}")

    def election(self, topology: str, identifier: str) -> Election:
        return _ZooKeeperElection(self, f"{self.root}/{ELECTIONS}/{check_name(topology)}", identifier)

    def watch(self, kind: Kind, name: str, callback: Callable[[object], None]) -> Callable[[], None]:
        path = self._path(kind, name)
        if self.session is not Session.CONNECTED:  # kazoo's DataWatch would wait for the connection
            raise StateError(f"ZooKeeper at {self.hosts}: cannot watch {path}: the connection is "
                             f"{self.session.value}")
        cancelled = threading.Event()
        first = [True]

        def on_change(data: Optional[bytes], stat: Optional[ZnodeStat]) -> Optional[bool]:
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

        try:
            self.client.DataWatch(path, on_change)
        except _KAZOO_ERRORS as e:
            raise StateError(f"ZooKeeper at {self.hosts}: cannot watch {path}: {e!r}") from e
        return cancelled.set


class _ZooKeeperElection(Election):
    """kazoo's Lock recipe, plus a lease so that a leader never outlives its leadership.

    The lock is an ephemeral sequential znode: it goes when the holder's
    session expires, and the server expires a session ``session_timeout``
    after it last heard from it. So a holder that had an answer from the
    server at (its) time t leads at least until t + session_timeout; the
    lease is renewed by asking for the lock node every quarter timeout and
    runs to three quarters of it. ``holds()`` is false while the lease has
    run out, the connection is suspended, or the session is lost; ``ended()``
    once the lease has run out or the session is lost (a suspended leader
    pauses, and goes on if the session survives). A process frozen (or cut
    off) longer than the timeout stops leading before another candidate can
    start, whatever its threads see first when it resumes.
    """

    def __init__(self, manager: ZooKeeperStateManager, path: str, identifier: str):
        self.manager = manager
        self.path = path
        self.identifier = identifier
        self.lease = manager.session_timeout * 0.75
        self._lock: Optional[Lock] = None
        self._lease_until = 0.0
        self._renewer: Optional[threading.Thread] = None
        manager.add_listener(self._on_session)

    def _on_session(self, session: Session) -> None:
        if session is Session.LOST:
            self._lease_until = 0.0

    def acquire(self, stop: threading.Event) -> bool:
        if self.holds():
            return True
        self.release()
        lock = self._lock = self.manager.client.Lock(self.path, self.identifier)
        done = threading.Event()

        def cancel_on_stop() -> None:
            while not done.is_set():
                if stop.wait(0.2):
                    lock.cancel()
                    return

        threading.Thread(target=cancel_on_stop, name="election-cancel", daemon=True).start()
        try:
            got = lock.acquire()
        except CancelledError:
            return False
        except _KAZOO_ERRORS as e:
            raise StateError(f"ZooKeeper at {self.manager.hosts}: election {self.path} failed: {e!r}") from e
        finally:
            done.set()
        if not got:
            return False
        self._lease_until = time.monotonic() + self.lease  # the server answered acquire's last request just now
        self._renewer = threading.Thread(target=self._renew, args=(lock,), name="election-lease", daemon=True)
        self._renewer.start()
        return True

    def _renew(self, lock: Lock) -> None:
        while self._lock is lock and lock.is_acquired:
            asked = time.monotonic()
            try:
                alive: Optional[bool] = self.manager.exists(f"{self.path}/{lock.node}")
            except StateError:
                alive = None  # no answer: the lease runs out by itself
            if alive is False:
                log.error("leadership of %s lost: its lock node is gone", self.path)
                self._lease_until = 0.0
                return
            if alive and self.manager.session is Session.CONNECTED:
                self._lease_until = asked + self.lease
            time.sleep(self.manager.session_timeout / 4)

    def holds(self) -> bool:
        return self.manager.session is Session.CONNECTED and not self.ended()

    def ended(self) -> bool:
        lock = self._lock
        return lock is None or not lock.is_acquired or time.monotonic() >= self._lease_until

    def release(self) -> None:
        lock, self._lock = self._lock, None
        self._lease_until = 0.0
        if lock is None:
            return
        try:
            lock.release()
        except _KAZOO_ERRORS as e:  # a lost session took the node already
            log.info("releasing %s: %r", self.path, e)
