"""A process's shipped files: each alias's version in force as a local path, kept current.

``FileCache`` is the container's folder of versions (``state/shipped_files.py``): a version that is not
there yet is fetched from where its update stored it, checked against its size and SHA-256, and written
atomically, so the tasks of a container that fetch the same version at once do not see half a file.

``FilesInForce`` holds the paths the tasks' contexts read (``TopologyContext.get_file``). The record
``files/<topology>`` is watched: its callback runs on the state manager's thread and only queues the
record; the instance loop takes it at its next flush tick (``take``, on the loop's thread), fetches what
changed, switches the paths and calls each task's ``on_file_update``. A process started after an update
reads the record at start, so a restarted task gets the version in force.
"""
from __future__ import annotations

import hashlib
import logging
import os
import queue
from typing import TYPE_CHECKING, Dict, List, Optional, Tuple

from squall.idl import schema
from squall.state import StateError, StorageError
from squall.state.shipped_files import FOLDER, LOCALISED, clean, read_stored, version_path
from squall.state.storage import LocalStorage

if TYPE_CHECKING:
    from squall.runtime.bootstrap import RuntimeEnv

log = logging.getLogger(__name__)


def container_cache(execution: schema.ExecutionState) -> FileCache:
    """This container's versions: locally the run folder's ``files/``, where submit and update put them
    (nothing is fetched); on YARN ``files/`` in the container's working folder, beside the submitted
    versions YARN localised in ``shipped/``."""
    if execution.cluster == "local":
        folder = os.path.join(execution.run_dir, FOLDER)
        return FileCache(folder, folder)
    return FileCache(os.path.join(os.getcwd(), FOLDER), os.path.join(os.getcwd(), LOCALISED))


class FileCache:
    """Versions of shipped files in local folders, each ``<alias>/<version>/<name>``: the versions
    fetched (``folder``) and those the scheduler localised (``localised``: never written)."""

    def __init__(self, folder: str, localised: str) -> None:
        self.folder = folder
        self.localised = localised
        self.storage = LocalStorage(folder)

    def path_of(self, f: schema.ShippedFile) -> str:
        """The local path of version ``f``, fetched first if it is not here (``StorageError`` when it
        cannot be, or arrives damaged)."""
        path = os.path.join(self.folder if f.stored else self.localised, version_path(f))
        if os.path.isfile(path) and os.path.getsize(path) == f.size:
            return path
        if not f.stored:
            raise StorageError(f"shipped file {f.key!r} version {f.version}: not at {path}, where the "
                               "scheduler should have localised it")
        data = read_stored(f.stored)
        digest = hashlib.sha256(data).hexdigest()
        if len(data) != f.size or digest != f.sha256:
            raise StorageError(f"shipped file {f.key!r} version {f.version} from {f.stored}: {len(data)} bytes "
                               f"with SHA-256 {digest}, expected {f.size} bytes with {f.sha256}")
        self.storage.write(version_path(f), data)
        return path

    def clean(self, f: schema.ShippedFile) -> None:
        """Delete this folder's versions of ``f``'s alias older than the one before ``f``."""
        clean(self.storage, f)


class FilesInForce:
    """The shipped files of this process's tasks: alias -> local path of the version in force
    (``paths``: the tasks' contexts read it), and the records the state watch hands over."""

    def __init__(self, cache: FileCache) -> None:
        self.cache = cache
        self.paths: Dict[str, str] = {}
        self.versions: Dict[str, int] = {}
        self.records: queue.SimpleQueue = queue.SimpleQueue()  # from the state manager's thread

    def on_record(self, record: Optional[schema.ShippedFiles]) -> None:
        """The state watch's callback (the state manager's thread): hand the record to the loop."""
        if record is not None:  # removed: the topology is being killed
            self.records.put(record)

    def apply(self, record: schema.ShippedFiles) -> List[Tuple[str, str]]:
        """Switch to the versions of ``record`` (the loop's thread); ``(alias, path)`` of each that changed.

        A version that cannot be fetched raises at start (the task cannot run without its files); on an
        update it is logged and the task keeps the version it has (its restart tries again)."""
        changed = []
        for f in record.files:
            if self.versions.get(f.key) == f.version:
                continue
            try:
                path = self.cache.path_of(f)
            except StateError as e:
                if f.key not in self.paths:
                    raise
                log.error("shipped file %r: version %d cannot be fetched (%s); the tasks keep version %d",
                          f.key, f.version, e, self.versions[f.key])
                continue
            self.paths[f.key] = path
            self.versions[f.key] = f.version
            changed.append((f.key, path))
            try:
                self.cache.clean(f)
            except StateError as e:
                log.warning("shipped file %r: old versions were not deleted: %s", f.key, e)
        return changed

    def take(self) -> List[Tuple[str, str]]:
        """The changes of the records handed over since the last call (the loop's thread; the newest
        record wins): nothing, at the cost of one ``empty()``, when none was."""
        if self.records.empty():
            return []
        record = None
        while not self.records.empty():
            record = self.records.get_nowait()
        return self.apply(record)


def start_shipped_files(env: RuntimeEnv) -> Optional[FilesInForce]:
    """This process's shipped files, watched: the versions in force now (fetched if need be); None when
    the topology ships none (an update cannot add an alias: nothing to watch)."""
    from squall.state import Kind

    record = env.state.get(Kind.FILES, env.name)
    if record is None or not record.files:
        return None
    files = FilesInForce(container_cache(env.execution))
    env.state.watch(Kind.FILES, env.name, files.on_record)
    files.apply(env.state.get(Kind.FILES, env.name) or record)  # read again: no update falls before the watch
    return files
