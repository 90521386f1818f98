"""Shipped files (``squall submit|update --files``): where each version is kept, written once here.

A version of a shipped file is ``<alias>/<version>/<name>`` under a folder:

- the run folder's ``files/`` on the submitting machine: submit copies every file there as version 1,
  and locally an update stores its new version there too (every container of a local topology reads
  that folder);
- on YARN, in a container's working folder: the submitted versions in ``shipped/`` (the run folder's
  ``files/`` as one archive Skein localises: YARN's copy, read-only, shared by the node's containers of
  the application), and in ``files/`` the newer versions the container fetched from where the update
  stored them, the checkpoint storage (``squall.state.storage``, an ``hdfs://`` URI every container
  reads), under ``<topology>/files/<run id>/``.

The record ``files/<topology>`` (``ShippedFiles``) lists the version in force of each alias with its
size, SHA-256 and, unless the scheduler localised it, the URI it is fetched from (``stored``).
"""
from __future__ import annotations

import os
from urllib.parse import urlparse

from squall.idl import schema
from squall.state.base import StateError
from squall.state.storage import CheckpointStorage, LocalStorage, open_storage

FOLDER = "files"  # in the run folder and in a YARN container's working folder
LOCALISED = "shipped"  # in a YARN container's working folder: the submitted versions, as YARN localised them
SHARED_SCHEMES = ("hdfs", "viewfs")  # storage every YARN container reads


def version_path(f: schema.ShippedFile) -> str:
    """``<alias>/<version>/<name>``: where a version lies under a folder of shipped files."""
    return f"{f.key}/{f.version}/{f.name}"


def run_storage(run_dir: str) -> LocalStorage:
    """The run folder's ``files/``: every version submit copied (and, locally, every update stored)."""
    return LocalStorage(os.path.join(run_dir, FOLDER))


def update_storage(execution: schema.ExecutionState, storage_setting: str) -> CheckpointStorage:
    """Where ``update --files`` stores a new version so that every container can fetch it: the run folder
    locally; on a cluster, ``<squall.state.storage>/<topology>/files/<run id>``, which must be shared (a
    container's disk is its own)."""
    if execution.cluster == "local":
        return run_storage(execution.run_dir)
    if urlparse(storage_setting).scheme not in SHARED_SCHEMES:
        raise StateError(f"squall.state.storage={storage_setting or '(empty: the run folder)'}: update --files on "
                         f"{execution.cluster} stores the new version where every container reads it: set it to "
                         "an hdfs:// URI")
    return open_storage(f"{_shared_folder(execution, storage_setting)}/{execution.run_id}", None)


def _shared_folder(execution: schema.ExecutionState, storage_setting: str) -> str:
    return f"{storage_setting.rstrip('/')}/{execution.topology_name}/{FOLDER}"


def delete_updates(execution: schema.ExecutionState, storage_setting: str) -> None:
    """Delete what updates of this run stored in a cluster's shared storage (kill; locally they are in the
    run folder, which stays until ``squall clean``)."""
    if execution.cluster != "local" and urlparse(storage_setting).scheme in SHARED_SCHEMES:
        open_storage(_shared_folder(execution, storage_setting), None).delete(execution.run_id)


def stored_uri(storage: CheckpointStorage, f: schema.ShippedFile) -> str:
    """The URI a container fetches version ``f`` from, once it is stored in ``storage``."""
    return f"{storage.uri.rstrip('/')}/{version_path(f)}"


def read_stored(uri: str) -> bytes:
    """The bytes of a version stored at ``uri`` (a ``StorageError`` names what failed)."""
    folder, name = uri.rstrip("/").rsplit("/", 1)
    return open_storage(folder, None).read(name)


def clean(storage: CheckpointStorage, f: schema.ShippedFile) -> None:
    """Delete the versions of ``f``'s alias in ``storage`` but ``f`` and the one before it (a task may still
    read that one until it switches)."""
    keep = {str(f.version), str(f.version - 1)}
    for name in storage.list(f.key):
        if name.isdigit() and name not in keep:
            storage.delete(f"{f.key}/{name}")
