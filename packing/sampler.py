"""Measuring this machine for a NodePool (the one module that imports psutil)."""
from __future__ import annotations

from typing import Any, Mapping

import psutil

from squall.packing.pool import Amount, NodePool, PoolSample


def local_capacity() -> Amount:
    return Amount(float(psutil.cpu_count() or 1), psutil.virtual_memory().total / (1024 * 1024))


def sample_local(interval: float = 0.0) -> PoolSample:
    """CPU cores busy (since the previous call when ``interval`` is 0) and memory in use."""
    busy = psutil.cpu_percent(interval=interval or None) / 100 * (psutil.cpu_count() or 1)
    memory = psutil.virtual_memory()
    return PoolSample(busy, (memory.total - memory.available) / (1024 * 1024))


def local_pool(config: Mapping[str, Any], node: str = "localhost") -> NodePool:
    return NodePool.from_config(node, local_capacity(), config)
