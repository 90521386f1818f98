"""Decoded records kept by their stored bytes: a record read again unchanged is not decoded again.

Thrift's compact protocol decodes in pure Python (thriftpy2 has no compiled compact codec): a
physical plan of 20,000 instances takes about a second, and a UI page that reads a
1,000-container topology's plans and container records would spend seconds decoding bytes it
decoded a moment before. Only the large kinds are kept (topologies, packing and physical plans,
container records), up to ``max_bytes`` of stored bytes, least recently used first out.

Records are values: what ``get`` returns may be shared with other readers of the same bytes, so
nobody changes one in place (a change is a new struct, written with ``put``).
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Callable

from squall.state.base import Kind

KEPT = (Kind.TOPOLOGY, Kind.PACKING_PLAN, Kind.PHYSICAL_PLAN, Kind.CONTAINER)
MAX_BYTES = 64 * 1024 * 1024


class DecodedRecords:
    """(kind, stored bytes) -> the decoded record, for the kinds in ``KEPT``."""

    def __init__(self, max_bytes: int = MAX_BYTES):
        self.max_bytes = max_bytes
        self.size = 0
        self._lock = threading.Lock()
        self._kept: OrderedDict = OrderedDict()

    def decode(self, kind: Kind, data: bytes, decode: Callable[[], object]) -> object:
        """The record of ``data``: kept, or ``decode()``'s (kept from now on)."""
        if kind not in KEPT:
            return decode()
        key = (kind, bytes(data))
        with self._lock:
            hit = self._kept.get(key)
            if hit is not None:
                self._kept.move_to_end(key)
                return hit
        record = decode()
        with self._lock:
            if key not in self._kept:
                self._kept[key] = record
                self.size += len(key[1])
                while self.size > self.max_bytes and self._kept:
                    (_, old), _ = self._kept.popitem(last=False)
                    self.size -= len(old)
        return record
