"""Checkpoint storage: where stateful tasks write their state, behind one interface.

``LocalStorage`` is a directory (the embedded default: ``checkpoints/`` in
the topology's run folder, or ``squall.state.storage`` as a path or
``file://`` URI). ``ArrowStorage`` is a pyarrow filesystem: HDFS through
pyarrow's ``HadoopFileSystem`` (``hdfs://namenode:port/path``; extra
``squall[hdfs]``; it needs libhdfs and the Hadoop classpath, as on a YARN
node).

Layout: ``<topology>/<checkpoint id>/<component>/task-<index>-of-<parallelism>``
holds what one task saved, each key with its key group (docs/state.md). A write is
atomic: a reader sees the whole file or none. Which checkpoints are complete
is not storage's business: the topology master records them in the state
manager (``checkpoints/<topology>``).
"""
from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Iterator, List, Optional
from urllib.parse import urlparse

from squall.state.base import StateError, StorageError

if TYPE_CHECKING:  # an extra (squall[hdfs]): imported only where HDFS is used
    import pyarrow.fs


class CheckpointStorage(ABC):
    """Files by relative path (``/``-separated) under the storage's root.

    Every failure of the storage itself (a full disk, a folder that cannot be
    written, a namenode that does not answer) is a ``StorageError`` naming the
    operation and the full path: it never leaves as a raw ``OSError``.
    """

    uri: str

    @abstractmethod
    def write(self, path: str, data: bytes) -> None:
        """Write ``data`` at ``path`` atomically (replacing what is there)."""

    @abstractmethod
    def read(self, path: str) -> bytes:
        ...

    @abstractmethod
    def list(self, path: str) -> List[str]:
        """Names in the folder ``path`` (``[]`` when it does not exist)."""

    @abstractmethod
    def delete(self, path: str) -> None:
        """Remove ``path`` and all under it (nothing when it does not exist)."""


@contextlib.contextmanager
def _storage_errors(operation: str, where: str) -> Iterator[None]:
    """An ``OSError`` inside becomes a StorageError saying what could not be done where."""
    try:
        yield
    except OSError as e:
        raise StorageError(f"checkpoint storage: cannot {operation} {where}: {e.strerror or e}") from e


class LocalStorage(CheckpointStorage):
    def __init__(self, root: str):
        self.root = os.path.abspath(root)
        self.uri = f"file://{self.root}"

    def _path(self, path: str) -> str:
        full = os.path.normpath(os.path.join(self.root, path))
        if not (full == self.root or full.startswith(self.root + os.sep)):
            raise StateError(f"checkpoint path {path!r} leaves the storage root {self.root}")
        return full

    def write(self, path: str, data: bytes) -> None:
        full = self._path(path)
        with _storage_errors("write checkpoint file", full):
            os.makedirs(os.path.dirname(full), exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=os.path.dirname(full), prefix=".tmp-")
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
                os.replace(tmp, full)
            except BaseException:
                if os.path.exists(tmp):
                    os.unlink(tmp)
                raise

    def read(self, path: str) -> bytes:
        full = self._path(path)
        with _storage_errors("read checkpoint file", full):
            with open(full, "rb") as f:
                return f.read()

    def list(self, path: str) -> List[str]:
        full = self._path(path)
        with _storage_errors("list checkpoint folder", full):
            try:
                return sorted(n for n in os.listdir(full) if not n.startswith(".tmp-"))
            except FileNotFoundError:
                return []

    def delete(self, path: str) -> None:
        full = self._path(path)
        with _storage_errors("delete checkpoint path", full):
            try:
                if os.path.isdir(full):
                    shutil.rmtree(full)
                elif os.path.exists(full):
                    os.unlink(full)
            except FileNotFoundError:  # another collection deleted it meanwhile
                pass


class ArrowStorage(CheckpointStorage):
    """A pyarrow filesystem under ``root``: HDFS (``ArrowStorage.hdfs``) through libhdfs. A write goes to a
    temporary name, then is renamed, which HDFS does atomically."""

    def __init__(self, fs: "pyarrow.fs.FileSystem", root: str, uri: str):
        from pyarrow import fs as fs_module

        self.fs, self.fs_module = fs, fs_module
        self.root = root.rstrip("/") or "/"
        self.uri = uri

    @classmethod
    def hdfs(cls, uri: str) -> "ArrowStorage":
        try:
            from pyarrow import fs
        except ImportError as e:
            raise StateError(f"squall.state.storage {uri!r} needs pyarrow: pip install 'squall[hdfs]'") from e
        parsed = urlparse(uri)
        try:
            hadoop = fs.HadoopFileSystem(parsed.hostname or "default", parsed.port or 0)
        except (OSError, RuntimeError) as e:
            raise StorageError(f"cannot open HDFS at {uri}: {e}") from e
        return cls(hadoop, parsed.path, uri)

    def _path(self, path: str) -> str:
        return f"{self.root}/{path}".replace("//", "/")

    def _where(self, path: str) -> str:
        return f"{self.uri.rstrip('/')}/{path}"

    def write(self, path: str, data: bytes) -> None:
        full = self._path(path)
        folder, name = full.rsplit("/", 1)
        tmp = f"{folder}/.tmp-{name}-{os.getpid()}"
        with _storage_errors("write checkpoint file", self._where(path)):
            self.fs.create_dir(folder, recursive=True)
            try:
                with self.fs.open_output_stream(tmp) as out:
                    out.write(data)
                self.fs.move(tmp, full)
            except BaseException:
                if self.fs.get_file_info(tmp).type == self.fs_module.FileType.File:
                    self.fs.delete_file(tmp)
                raise

    def read(self, path: str) -> bytes:
        with _storage_errors("read checkpoint file", self._where(path)):
            with self.fs.open_input_stream(self._path(path)) as f:
                return f.read()

    def list(self, path: str) -> List[str]:
        selector = self.fs_module.FileSelector(self._path(path), allow_not_found=True)
        with _storage_errors("list checkpoint folder", self._where(path)):
            infos = self.fs.get_file_info(selector)
        return sorted(i.base_name for i in infos if not i.base_name.startswith(".tmp-"))

    def delete(self, path: str) -> None:
        full = self._path(path)
        with _storage_errors("delete checkpoint path", self._where(path)):
            info = self.fs.get_file_info(full)
            if info.type == self.fs_module.FileType.Directory:
                self.fs.delete_dir(full)
            elif info.type == self.fs_module.FileType.File:
                self.fs.delete_file(full)


def open_storage(setting: str, run_dir: Optional[str]) -> CheckpointStorage:
    """The storage ``squall.state.storage`` names: empty for ``<run_dir>/checkpoints``, a path or a
    ``file://`` URI for a directory, ``hdfs://`` for HDFS."""
    if not setting:
        if not run_dir:
            raise StateError("squall.state.storage is empty and the topology has no run folder to keep "
                             "checkpoints in: set it to a directory or an hdfs:// URI")
        return LocalStorage(os.path.join(run_dir, "checkpoints"))
    scheme = urlparse(setting).scheme
    if scheme in ("", "file"):
        return LocalStorage(urlparse(setting).path if scheme else setting)
    if scheme in ("hdfs", "viewfs"):
        return ArrowStorage.hdfs(setting)
    raise StateError(f"squall.state.storage {setting!r}: unknown scheme {scheme!r} (a directory, file:// or hdfs://)")


# ------------------------------------------------------------------ layout
def checkpoint_dir(topology: str, checkpoint_id: int) -> str:
    return f"{topology}/{checkpoint_id}"


def task_file(topology: str, checkpoint_id: int, component: str, index: int, parallelism: int) -> str:
    """Where task ``index`` of ``parallelism`` of ``component`` saves its state for a checkpoint."""
    return f"{topology}/{checkpoint_id}/{component}/task-{index}-of-{parallelism}"


def saved_tasks(storage: CheckpointStorage, topology: str, checkpoint_id: int, component: str) -> list:
    """``[(index, parallelism, path)]`` of what the tasks of ``component`` saved for a checkpoint."""
    out = []
    folder = f"{topology}/{checkpoint_id}/{component}"
    for name in storage.list(folder):
        parts = name.split("-")
        if len(parts) == 4 and parts[0] == "task" and parts[2] == "of" and parts[1].isdigit() and parts[3].isdigit():
            out.append((int(parts[1]), int(parts[3]), f"{folder}/{name}"))
    return out


def checkpoint_ids(storage: CheckpointStorage, topology: str) -> list:
    """Checkpoint ids with a folder in storage, ascending."""
    return sorted(int(n) for n in storage.list(topology) if n.isdigit())
