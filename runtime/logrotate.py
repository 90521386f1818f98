"""Size-rotated log files that their writers never reopen.

Every runtime process writes its output to a file its executor opened for
it in append mode (so a native crash or a ``print`` lands there too). The
executor rotates those files by copy and truncate, as logrotate's
``copytruncate`` does: ``log`` is copied to ``log.1`` (older copies shift to
``log.2`` ... ``log.<backups>``, the oldest dropped) and truncated to zero;
writers keep their descriptor, and since it is in append mode their next
write goes to the new end. Lines written between the copy and the truncate
are lost (a few at most). On YARN this is what keeps a container that runs
for weeks from filling its disk: Skein asks for no rolling log aggregation.
"""
from __future__ import annotations

import logging
import os
import shutil
import stat
from typing import Optional

log = logging.getLogger(__name__)


def rotate(path: str, max_bytes: int, backups: int) -> bool:
    """Rotate ``path`` if it is larger than ``max_bytes``; True if it was rotated."""
    try:
        if os.path.getsize(path) <= max_bytes:
            return False
        for k in range(backups - 1, 0, -1):
            older = f"{path}.{k}"
            if os.path.exists(older):
                os.replace(older, f"{path}.{k + 1}")
        shutil.copyfile(path, f"{path}.1")
        with open(path, "r+b") as f:
            f.truncate(0)
    except OSError as e:
        log.warning("cannot rotate %s: %s", path, e)
        return False
    return True


def own_output_file() -> Optional[str]:
    """The regular file this process's stdout goes to, if it is one (Linux)."""
    try:
        path = os.readlink("/proc/self/fd/1")
        return path if stat.S_ISREG(os.stat(path).st_mode) else None
    except OSError:
        return None
