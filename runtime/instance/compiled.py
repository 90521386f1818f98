"""The per-tuple paths in C (``_emit.c``): the emit, a bolt's receive loops, a spout's acks at least once,
``emit_many``'s cut by key.

The extension is optional (``setup.py``): where it was not built, or ``SQUALL_PURE_PYTHON`` is set
in the environment when an instance is made, ``compiled`` answers None and the Python paths run;
they stay the reference the C ones follow line for line.
"""
from __future__ import annotations

import os
from typing import Any, Optional

try:
    from squall.runtime.instance import _emit
except ImportError:  # not built: the Python paths run
    _emit = None

BUILT = _emit is not None


def compiled(name: str) -> Optional[Any]:
    """``_emit``'s ``name`` (``CompiledEmit``, ``AutoAckedLoop``, ``ack_all``, ``cut_rows``, ``process_rows``), or
    None: the Python path runs."""
    if _emit is None or os.environ.get("SQUALL_PURE_PYTHON"):
        return None
    return getattr(_emit, name)
