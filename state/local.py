"""The local-directory state manager: the embedded default.

Records are files ``<root>/<kind>/<name>`` holding the Thrift compact
encoding, replaced atomically (write, fsync, rename). An ephemeral record has
an owner file next to it naming the creating process (pid and start time);
once that process is gone the record reads as absent, like a ZooKeeper
ephemeral node whose session expired. Watches poll file modification times.
Leader election is an exclusive ``flock`` on ``elections/<topology>``: the
kernel releases it the moment its holder dies, and nothing else can take it
from a live holder, so ``holds()`` stays true until ``release()``.
"""
from __future__ import annotations

import fcntl
import logging
import os
import shutil
import threading
from typing import Callable, Optional, Tuple

import psutil

from squall.state.base import (
    ELECTIONS,
    AlreadyExists,
    Election,
    Kind,
    StateError,
    StateManager,
    check_name,
    decode_record,
    encode_record,
    member,
)
from squall.state.decoded import DecodedRecords

log = logging.getLogger(__name__)

_OWNER_SUFFIX = ".owner"


def _process_identity(pid: int) -> Optional[str]:
    try:
        return f"{pid}:{psutil.Process(pid).create_time():.3f}"
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return None


class LocalStateManager(StateManager):
    def __init__(self, root: str, poll_interval: float = 0.2):
        self.root = os.path.abspath(os.path.expanduser(root))
        self.poll_interval = poll_interval
        self._decoded = DecodedRecords()
        self._watches: list = []
        self._watch_lock = threading.Lock()
        self._stopping = threading.Event()
        self._poller: Optional[threading.Thread] = None

    # lifecycle ------------------------------------------------------------------
    def start(self) -> None:
        try:
            for folder in [kind.value for kind in Kind] + [ELECTIONS]:
                os.makedirs(os.path.join(self.root, folder), mode=0o700, exist_ok=True)
        except OSError as e:
            raise StateError(f"cannot create state directory {self.root}: {e.strerror}") from e

    def close(self) -> None:
        self._stopping.set()
        if self._poller is not None and self._poller is not threading.current_thread():
            self._poller.join(timeout=2)
        self._poller = None
        me = _process_identity(os.getpid())
        for kind in Kind:
            if not kind.ephemeral:
                continue
            names = self._raw_names(kind)
            if kind.grouped:
                names = [member(t, m) for t in names for m in self._raw_names(kind, t)]
            for name in names:
                if self._owner(kind, name) == me:
                    self.delete(kind, name)

    # records --------------------------------------------------------------------
    def _path(self, kind: Kind, name: str) -> str:
        return os.path.join(self.root, kind.value, check_name(name, kind))

    def create(self, kind: Kind, name: str, value: object) -> None:
        path = self._path(kind, name)
        if kind.ephemeral and os.path.exists(path) and not self._alive(kind, name):
            self.delete(kind, name)
        try:
            os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
            fd = os.open(path + ".creating", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError as e:
            raise AlreadyExists(f"state record {path} is being created by another process") from e
        except OSError as e:
            raise StateError(f"cannot write state record {path}: {e.strerror}") from e
        try:
            os.close(fd)
            if os.path.exists(path):
                raise AlreadyExists(f"state record {path} already exists")
            self.put(kind, name, value)
        finally:
            os.unlink(path + ".creating")

    def put(self, kind: Kind, name: str, value: object) -> None:
        path = self._path(kind, name)
        data = encode_record(kind, value)
        if kind.ephemeral:
            self._write(path + _OWNER_SUFFIX, _process_identity(os.getpid()).encode())
        self._write(path, data)

    def _write(self, path: str, data: bytes) -> None:
        tmp = f"{path}.tmp.{os.getpid()}.{threading.get_ident()}"
        try:
            os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except OSError as e:
            raise StateError(f"cannot write state record {path}: {e.strerror}") from e

    def get(self, kind: Kind, name: str) -> object:
        path = self._path(kind, name)
        if kind.ephemeral and not self._alive(kind, name):
            return None
        try:
            with open(path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            return None
        except OSError as e:
            raise StateError(f"cannot read state record {path}: {e.strerror}") from e
        return self._decoded.decode(kind, data, lambda: decode_record(kind, path, data))

    def delete(self, kind: Kind, name: str) -> None:
        path = self._path(kind, name)
        for p in (path, path + _OWNER_SUFFIX):
            try:
                os.unlink(p)
            except FileNotFoundError:
                pass
            except OSError as e:
                raise StateError(f"cannot delete state record {p}: {e.strerror}") from e

    def names(self, kind: Kind) -> list:
        if kind.grouped:
            return [t for t in self._raw_names(kind) if self.members(kind, t)]
        return [n for n in self._raw_names(kind) if not kind.ephemeral or self._alive(kind, n)]

    def members(self, kind: Kind, topology: str) -> list:
        return [m for m in self._raw_names(kind, check_name(topology))
                if self._alive(kind, member(topology, m))]

    def _raw_names(self, kind: Kind, topology: Optional[str] = None) -> list:
        folder = os.path.join(self.root, kind.value, *([topology] if topology else []))
        try:
            entries = os.listdir(folder)
        except (FileNotFoundError, NotADirectoryError):
            return []
        except OSError as e:
            raise StateError(f"cannot list state folder {folder}: {e.strerror}") from e
        return sorted(e for e in entries if not e.endswith((_OWNER_SUFFIX, ".creating")) and ".tmp." not in e)

    def _delete_group(self, kind: Kind, topology: str) -> None:
        shutil.rmtree(os.path.join(self.root, kind.value, check_name(topology)), ignore_errors=True)

    def _delete_election(self, topology: str) -> None:
        # the lock file stays: a candidate still blocked on it must not get a fresh file (and a second
        # leader); it is empty and reused by the next run of the same name
        pass

    def election(self, topology: str, identifier: str) -> Election:
        return _FileElection(os.path.join(self.root, ELECTIONS, check_name(topology)), self.poll_interval)

    def _owner(self, kind: Kind, name: str) -> Optional[str]:
        path = self._path(kind, name) + _OWNER_SUFFIX
        try:
            with open(path) as f:
                return f.read().strip()
        except FileNotFoundError:
            return None
        except OSError as e:
            raise StateError(f"cannot read state record owner {path}: {e.strerror}") from e

    def _alive(self, kind: Kind, name: str) -> bool:
        owner = self._owner(kind, name)
        if owner is None:
            return False
        pid = int(owner.split(":", 1)[0])
        return _process_identity(pid) == owner

    # watches --------------------------------------------------------------------
    def watch(self, kind: Kind, name: str, callback: Callable[[object], None]) -> Callable[[], None]:
        entry = [kind, name, callback, self._stamp(kind, name)]
        with self._watch_lock:
            self._watches.append(entry)
            if self._poller is None:
                self._stopping.clear()
                self._poller = threading.Thread(target=self._poll, name="state-watch", daemon=True)
                self._poller.start()

        def cancel() -> None:
            with self._watch_lock:
                if entry in self._watches:
                    self._watches.remove(entry)

        return cancel

    def _stamp(self, kind: Kind, name: str) -> Optional[Tuple[int, int, int, bool]]:
        path = self._path(kind, name)
        try:
            st = os.stat(path)
        except FileNotFoundError:
            return None
        except OSError as e:
            raise StateError(f"cannot watch state record {path}: {e.strerror}") from e
        return (st.st_mtime_ns, st.st_ino, st.st_size, self._alive(kind, name) if kind.ephemeral else True)

    def _poll(self) -> None:
        while not self._stopping.wait(self.poll_interval):
            with self._watch_lock:
                watches = list(self._watches)
            for entry in watches:
                kind, name, callback, last = entry
                try:
                    stamp = self._stamp(kind, name)
                except StateError as e:  # unreadable for now: the watch goes on
                    log.warning("%s", e)
                    continue
                if stamp == last:
                    continue
                entry[3] = stamp
                try:
                    callback(self.get(kind, name))
                except Exception:
                    log.exception("state watch callback for %s/%s failed", kind.value, name)


class _FileElection(Election):
    """An exclusive ``flock`` on one file per topology; the kernel frees it when its holder dies."""

    def __init__(self, path: str, poll_interval: float):
        self.path = path
        self.poll_interval = poll_interval
        self._fd: Optional[int] = None

    def acquire(self, stop: threading.Event) -> bool:
        if self._fd is not None:
            return True
        try:
            os.makedirs(os.path.dirname(self.path), mode=0o700, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as e:
            raise StateError(f"cannot open election file {self.path}: {e.strerror}") from e
        while not stop.is_set():
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                stop.wait(self.poll_interval)
                continue
            self._fd = fd
            return True
        os.close(fd)
        return False

    def holds(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
