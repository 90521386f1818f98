"""Files under one root directory, local or on HDFS, through a pyarrow filesystem.

One code path for both: a local directory (or ``file://`` URI) is pyarrow's ``LocalFileSystem``, an
``hdfs://`` URI its ``HadoopFileSystem`` (libhdfs and the Hadoop classpath, as on a YARN node; the
approach of ``squall.state.storage.ArrowStorage``). Paths given to a ``FileStore`` are relative to its
root, ``/``-separated. Errors are ``OSError`` naming the full path.
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Iterator, NamedTuple
from urllib.parse import urlparse

from squall.connectors.files.formats import InputStream, OutputStream

if TYPE_CHECKING:  # an extra (squall[files]): imported where a store is opened
    import pyarrow.fs


class FileEntry(NamedTuple):
    path: str  # relative to the root
    size: int


def is_hidden(relpath: str) -> bool:
    """A path Spark and Hadoop input formats skip: a part of it starts with ``.`` or ``_``."""
    return any(part.startswith((".", "_")) for part in relpath.split("/") if part)


class FileStore:
    """A root directory on a pyarrow filesystem."""

    def __init__(self, fs: "pyarrow.fs.FileSystem", root: str, uri: str):
        from pyarrow import fs as fs_module

        self.fs, self._fs_module = fs, fs_module
        self.root = root.rstrip("/") or "/"
        self.uri = uri

    @classmethod
    def open(cls, uri: str) -> "FileStore":
        """The store ``uri`` names: a path, ``file://`` or ``hdfs://`` (``viewfs://``)."""
        try:
            from pyarrow import fs
        except ImportError as e:  # pragma: no cover - pyarrow is in squall[files]
            raise OSError(f"files.path {uri!r} needs pyarrow: pip install 'squall[hdfs]'") from e
        parsed = urlparse(uri)
        if parsed.scheme in ("", "file"):
            root = os.path.abspath(parsed.path if parsed.scheme else uri)
            return cls(fs.LocalFileSystem(), root, uri)
        if parsed.scheme in ("hdfs", "viewfs"):
            try:
                hadoop = fs.HadoopFileSystem(parsed.hostname or "default", parsed.port or 0)
            except (OSError, RuntimeError) as e:
                raise OSError(f"cannot open HDFS at {uri}: {e}") from e
            return cls(hadoop, parsed.path or "/", uri)
        raise ValueError(f"files.path {uri!r}: unknown scheme {parsed.scheme!r} (a directory, file:// or hdfs://)")

    def full(self, relpath: str) -> str:
        return f"{self.root}/{relpath}" if relpath else self.root

    def _where(self, relpath: str) -> str:
        return f"{self.uri.rstrip('/')}/{relpath}" if relpath else self.uri

    # queries -------------------------------------------------------------------------------------
    def is_dir(self, relpath: str = "") -> bool:
        return self.fs.get_file_info(self.full(relpath)).type == self._fs_module.FileType.Directory

    def exists(self, relpath: str) -> bool:
        return self.fs.get_file_info(self.full(relpath)).type != self._fs_module.FileType.NotFound

    def walk(self, relpath: str = "") -> Iterator[FileEntry]:
        """Every file under ``relpath``, hidden ones too (nothing when it does not exist)."""
        selector = self._fs_module.FileSelector(self.full(relpath), recursive=True, allow_not_found=True)
        for info in self.fs.get_file_info(selector):
            if info.type == self._fs_module.FileType.File:
                yield FileEntry(self._relative(info.path), info.size or 0)

    def _relative(self, path: str) -> str:
        """``path`` as a filesystem lists it (absolute, or with a scheme and host on HDFS) under the root."""
        path = urlparse(path).path if "://" in path else path
        root = self.root.strip("/")
        path = path.lstrip("/")
        return path[len(root) + 1:] if root and path.startswith(root + "/") else path

    # writes --------------------------------------------------------------------------------------
    def open_output(self, relpath: str) -> OutputStream:
        """A new output stream at ``relpath`` (its folders made)."""
        full = self.full(relpath)
        try:
            self.fs.create_dir(full.rsplit("/", 1)[0], recursive=True)
            return self.fs.open_output_stream(full)
        except OSError as e:
            raise OSError(f"cannot write {self._where(relpath)}: {e}") from e

    def open_input(self, relpath: str) -> InputStream:
        """A random-access file (seek, read)."""
        try:
            return self.fs.open_input_file(self.full(relpath))
        except OSError as e:
            raise OSError(f"cannot read {self._where(relpath)}: {e}") from e

    def rename(self, src: str, dst: str) -> bool:
        """Move ``src`` to ``dst``; idempotent: when ``src`` is gone and ``dst`` is there, it was done.
        Returns whether it moved now."""
        if not self.exists(src):
            if self.exists(dst):
                return False
            raise OSError(f"cannot commit {self._where(src)}: neither it nor {self._where(dst)} exists")
        try:
            self.fs.move(self.full(src), self.full(dst))
        except OSError as e:
            raise OSError(f"cannot rename {self._where(src)} to {dst}: {e}") from e
        return True

    def delete(self, relpath: str) -> None:
        """Remove a file (nothing when it is absent)."""
        try:
            self.fs.delete_file(self.full(relpath))
        except FileNotFoundError:
            pass
        except OSError as e:
            if self.exists(relpath):
                raise OSError(f"cannot delete {self._where(relpath)}: {e}") from e

    def check_writable(self) -> None:
        """Make the root directory and write, then delete, a hidden test file: ``OSError`` naming the path."""
        probe = f".squall-preflight-{os.getpid()}"
        try:
            self.fs.create_dir(self.root, recursive=True)
            with self.fs.open_output_stream(self.full(probe)) as out:
                out.write(b"ok")
            self.fs.delete_file(self.full(probe))
        except OSError as e:
            raise OSError(f"files.path {self.uri}: cannot write there ({e})") from None
