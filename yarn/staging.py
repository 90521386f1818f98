"""What travels to every container as Skein files, staged in the run folder at submit.

- ``topology``: the topology file's folder as a ``.tar.gz`` archive (hidden
  entries and ``__pycache__`` left out), unpacked by YARN into ``topology/``;
  the container puts it on ``PYTHONPATH`` so components import as they did
  at submit.
- ``state.json``: the state address with the ZooKeeper credential (mode
  0600; Skein uploads it to the application's staging folder, readable by
  the submitter only, and YARN localises it with application visibility).
  The topology's secret is in its execution state, behind that credential.
  Neither is ever on a command line or in an environment.
- ``environment``: the packed Python environment, when one is configured.
- ``shipped``: the files shipped at submit (``--files``), the run folder's ``files/`` as a ``.tar``
  archive, unpacked by YARN into ``shipped/<alias>/1/<name>`` in each task container (Skein's keys
  are file names, so one archive keeps the versions' folders).
"""
from __future__ import annotations

import os
import tarfile
from dataclasses import dataclass
from typing import Optional

from squall.state.shipped_files import FOLDER, LOCALISED

TOPOLOGY_KEY = "topology"
SHIPPED_KEY = LOCALISED
STATE_KEY = "state.json"


@dataclass(frozen=True)
class Staged:
    """Local sources of the files every container gets."""

    state_file: str
    topology_archive: str
    environment: Optional[str] = None
    shipped: Optional[str] = None  # the archive of the files shipped at submit


def _exclude(info: tarfile.TarInfo) -> Optional[tarfile.TarInfo]:
    name = os.path.basename(info.name)
    if name.startswith(".") or name == "__pycache__":
        return None
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


def topology_archive(source_file: str, dest_dir: str) -> str:
    """Archive the folder of ``source_file`` into ``dest_dir/topology.tar.gz``; its path."""
    os.makedirs(dest_dir, exist_ok=True)
    path = os.path.join(dest_dir, f"{TOPOLOGY_KEY}.tar.gz")
    folder = os.path.dirname(os.path.abspath(source_file))
    with tarfile.open(path, "w:gz") as tar:
        for entry in sorted(os.listdir(folder)):
            tar.add(os.path.join(folder, entry), arcname=entry, filter=_exclude)
    return path


def shipped_archive(run_dir: str, dest_dir: str) -> str:
    """Archive the run folder's shipped files (``<alias>/<version>/<name>``) into ``dest_dir/shipped.tar``
    (not compressed: models and tables are often compressed already); its path."""
    os.makedirs(dest_dir, exist_ok=True)
    path = os.path.join(dest_dir, f"{SHIPPED_KEY}.tar")
    folder = os.path.join(run_dir, FOLDER)
    with tarfile.open(path, "w") as tar:
        for entry in sorted(os.listdir(folder)):
            tar.add(os.path.join(folder, entry), arcname=entry, filter=_exclude)
    return path
