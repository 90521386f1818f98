"""User metrics registered with ``TopologyContext.register_metric``."""
from __future__ import annotations

from collections import defaultdict
from typing import Any, Optional


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
