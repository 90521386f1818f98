"""``squall submit|update --files PATH[#ALIAS]``: files shipped to every task (Storm's distributed cache).

Everything is checked before anything is launched or changed: each ``PATH`` is an existing regular
file, each alias (the file's name unless ``#ALIAS`` gives one) is a plain name given once, and the files
together stay within ``squall.files.max.mb``. An update replaces the version of an alias shipped at
submit; it cannot add an alias (a component asks for the aliases it was written for, and a mistyped
alias would otherwise ship a file nobody reads).

Submit copies each file into the run folder as version 1 (``<run_dir>/files/<alias>/1/<name>``); an
update stores version n + 1 where every container reads it (``state/shipped_files.py``), writes the
record ``files/<topology>``, and deletes the versions before n.
"""
from __future__ import annotations

import hashlib
import logging
import os
import re
from dataclasses import dataclass
from typing import List, Mapping, Optional, Sequence

from squall.errors import SquallError
from squall.idl import schema
from squall.state import Kind, StateError, StateManager
from squall.state.shipped_files import clean, run_storage, stored_uri, update_storage, version_path
from squall.state.storage import CheckpointStorage

log = logging.getLogger(__name__)

ALIAS = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
MAX_KEY = "squall.files.max.mb"


class FilesError(SquallError):
    """A ``--files`` argument that cannot be shipped (names the file or alias)."""


@dataclass(frozen=True)
class LocalFile:
    """A file on this machine, as ``--files PATH[#ALIAS]`` names it."""

    path: str  # absolute
    alias: str
    size: int
    argument: str = ""  # how the user named it, for messages: ``--files PATH#ALIAS`` (default), an upload

    @property
    def named(self) -> str:
        return self.argument or f"--files {self.path}#{self.alias}"

    @property
    def name(self) -> str:
        return os.path.basename(self.path)

    def read(self) -> tuple[bytes, str]:
        """Its bytes and their SHA-256 (hex)."""
        try:
            with open(self.path, "rb") as f:
                data = f.read()
        except OSError as e:
            raise FilesError(f"{self.named}: cannot read {self.path}: {e.strerror}") from e
        return data, hashlib.sha256(data).hexdigest()


def parse(texts: Sequence[str]) -> List[LocalFile]:
    """``PATH[#ALIAS]`` arguments as files, refusing a missing file, a directory, a bad alias or one given
    twice (a ``FilesError`` naming it)."""
    files: List[LocalFile] = []
    by_alias: dict = {}
    for text in texts:
        path, _, alias = text.partition("#")
        if not path:
            raise FilesError(f"--files {text!r}: give PATH or PATH#ALIAS")
        alias = alias or os.path.basename(path)
        if not os.path.exists(path):
            raise FilesError(f"--files {text}: no such file {path!r}")
        if os.path.isdir(path):
            raise FilesError(f"--files {text}: {path!r} is a directory; ship a file (an archive of the folder)")
        if not os.path.isfile(path):
            raise FilesError(f"--files {text}: {path!r} is not a regular file")
        if not ALIAS.fullmatch(alias):
            raise FilesError(f"--files {text}: alias {alias!r} must be letters, digits, '_', '.' and '-', "
                             "starting with a letter or digit")
        if alias in by_alias:
            raise FilesError(f"--files {text}: alias {alias!r} is given twice (also for {by_alias[alias]})")
        by_alias[alias] = path
        files.append(LocalFile(os.path.abspath(path), alias, os.path.getsize(path)))
    return files


def check_size(sizes: Mapping[str, int], max_mb: float) -> None:
    """The files (alias -> bytes) together within ``squall.files.max.mb``; else name the largest."""
    total = sum(sizes.values())
    if total > max_mb * 1024 * 1024:
        largest = max(sizes, key=lambda a: sizes[a])
        raise FilesError(f"shipped files: they would hold {_amount(total)} together, above {MAX_KEY}={max_mb:g} "
                         f"(the largest: {largest!r}, {_amount(sizes[largest])})")


def _amount(size: int) -> str:
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KiB"
    return f"{size / 1024 / 1024:.2f} MiB"


def _entry(local: LocalFile, version: int) -> tuple[schema.ShippedFile, bytes]:
    """The record entry of ``local`` as ``version`` of its alias, and its bytes."""
    data, digest = local.read()
    return schema.ShippedFile(key=local.alias, version=version, name=local.name, size=len(data), sha256=digest), data


def _store(storage: CheckpointStorage, entry: schema.ShippedFile, data: bytes, shared: bool) -> schema.ShippedFile:
    """Write a version into ``storage``; its entry, with ``stored`` when containers fetch it from there
    (``shared``)."""
    storage.write(version_path(entry), data)
    if shared:
        entry.stored = stored_uri(storage, entry)
    return entry


def ship_at_submit(files: Sequence[LocalFile], execution: schema.ExecutionState) -> schema.ShippedFiles:
    """Copy ``files`` into the run folder as version 1. Locally the containers read them there; on YARN the
    scheduler has Skein localise these copies into every container (no ``stored``)."""
    storage = run_storage(execution.run_dir)
    local = execution.cluster == "local"
    return schema.ShippedFiles(files=[_store(storage, *_entry(f, 1), shared=local) for f in files])


def update(state: StateManager, execution: schema.ExecutionState, files: Sequence[LocalFile],
           config: Mapping[str, object], dry_run: bool = False) -> List[schema.ShippedFile]:
    """Ship a new version of each of ``files`` (aliases shipped at submit) to the running topology: store
    it, write the record (each process switches at its next timer tick), delete versions older than the
    previous one. Returns the new entries (with ``dry_run``, those it would write: nothing is changed)."""
    name = execution.topology_name
    record = state.get(Kind.FILES, name)
    current = {f.key: f for f in (record.files if record is not None else [])}
    for f in files:
        if f.alias not in current:
            known = f"shipped: {', '.join(sorted(current))}" if current else "it ships none"
            raise FilesError(f"{f.named}: topology {name!r} has no shipped file {f.alias!r} "
                             f"({known}); an update replaces files shipped at submit")
    check_size({**{a: f.size for a, f in current.items()}, **{f.alias: f.size for f in files}},
               float(config[MAX_KEY]))
    storage = update_storage(execution, str(config["squall.state.storage"]))
    prepared = [_entry(f, current[f.alias].version + 1) for f in files]
    if dry_run:
        return [entry for entry, _ in prepared]
    new = [_store(storage, entry, data, shared=True) for entry, data in prepared]
    for entry in new:
        current[entry.key] = entry
    state.put(Kind.FILES, name, schema.ShippedFiles(files=[current[a] for a in sorted(current)]))
    for entry in new:
        try:
            clean(storage, entry)
        except StateError as e:  # the update is made: old versions only take room
            log.warning("shipped file %r: versions before %d were not deleted: %s", entry.key, entry.version - 1, e)
    return new


def as_json(f: schema.ShippedFile) -> dict:
    """A version as ``squall show --json`` and ``squall update --files --json`` give it."""
    return {"alias": f.key, "version": f.version, "name": f.name, "size": f.size, "sha256": f.sha256}


def shown(record: Optional[schema.ShippedFiles]) -> List[dict]:
    """The versions in force, as ``squall show --json`` lists them."""
    return [as_json(f) for f in (record.files if record is not None else [])]


def shipped_line(name: str, dry_run: bool) -> str:
    """The last line of an update of shipped files."""
    if dry_run:
        return "dry run: nothing applied"
    return f"shipped to topology {name!r}: every task switches to the new versions at its next timer tick"


def describe(entries: Sequence[schema.ShippedFile]) -> List[str]:
    """One line per version: alias, version, size, file name."""
    return [f"  {e.key}: version {e.version}, {e.size} bytes ({e.name})" for e in entries]
