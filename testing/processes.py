"""The live processes of a Squall home: what a test checks is gone once it has killed what it submitted."""
from __future__ import annotations

import os
from typing import List

import psutil


def processes_under(home: str) -> List[psutil.Process]:
    """Live processes (zombies aside) whose command line names a file under ``home``: every executor,
    supervisor and runtime process of a local cluster does (its state file is in its run folder)."""
    root = os.path.abspath(home) + os.sep
    found = []
    for p in psutil.process_iter(["cmdline", "status"]):
        if p.info["status"] != psutil.STATUS_ZOMBIE and root in " ".join(p.info["cmdline"] or []):
            found.append(p)
    return found
