"""User metrics registered with ``TopologyContext.register_metric``."""
from __future__ import annotations

import time
from collections import defaultdict
from typing import Any, Callable, Mapping, Optional

# the user metric a source spout reports its partitions under (``SourcePartitions``); ``squall metrics``,
# the UI and the capacity report show it
from squall.metrics_schema import SOURCE_PARTITIONS

__all__ = ["CountMetric", "MeanMetric", "Metric", "MultiCountMetric", "SOURCE_PARTITIONS", "SourcePartitions"]


class Metric:
    """A value the runtime reads and resets once per metrics bucket."""

    def get_value_and_reset(self) -> Any:
        raise NotImplementedError


class CountMetric(Metric):
    def __init__(self) -> None:
        self.value = 0

    def incr(self, by: int = 1) -> None:
        self.value += by

    def get_value_and_reset(self) -> int:
        value, self.value = self.value, 0
        return value


class MultiCountMetric(Metric):
    def __init__(self) -> None:
        self.values: dict = defaultdict(int)

    def incr(self, key: str, by: int = 1) -> None:
        self.values[key] += by

    def get_value_and_reset(self) -> dict:
        values, self.values = dict(self.values), defaultdict(int)
        return values


class MeanMetric(Metric):
    def __init__(self) -> None:
        self.total = 0.0
        self.count = 0

    def update(self, value: float) -> None:
        self.total += value
        self.count += 1

    def get_value_and_reset(self) -> Optional[float]:
        mean = self.total / self.count if self.count else None
        self.total, self.count = 0.0, 0
        return mean


class SourcePartitions(Metric):
    """What a spout reads from an external source, per partition (a Kafka topic's partition, a file): its
    lag (records the source holds that the spout has not read yet; None when unknown), and the records
    and bytes read per second over the bucket. A connector registers it under ``SOURCE_PARTITIONS``;
    lag is what a consumer is sized by (docs/connectors.md)."""

    def __init__(self, lag: Callable[[], Mapping[str, Optional[int]]]):
        self._lag = lag
        self._read: dict = {}
        self._since = time.monotonic()

    def read(self, partition: str, records: int, nbytes: int) -> None:
        """``records`` records of ``nbytes`` bytes were read from ``partition``."""
        counts = self._read.get(partition)
        if counts is None:
            self._read[partition] = [records, nbytes]
        else:
            counts[0] += records
            counts[1] += nbytes

    def get_value_and_reset(self) -> dict:
        now = time.monotonic()
        span = max(now - self._since, 1e-9)
        lag = dict(self._lag())
        out = {}
        for partition in sorted(set(lag) | set(self._read)):
            records, nbytes = self._read.get(partition, (0, 0))
            out[partition] = {"lag": lag.get(partition), "records_per_sec": round(records / span, 3),
                              "bytes_per_sec": round(nbytes / span, 3)}
        self._read, self._since = {}, now
        return out
