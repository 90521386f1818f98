"""Waiting on a condition with a deadline: the one way Squall's tests, and users', wait."""
from __future__ import annotations

import time
from typing import Callable, TypeVar

T = TypeVar("T")


def wait_until(predicate: Callable[[], T], timeout: float = 60.0, what: str = "condition",
               interval: float = 0.1) -> T:
    """Call ``predicate`` until it returns something true, and return that; after ``timeout`` seconds raise
    ``AssertionError`` naming ``what`` was waited for. No fixed sleep places an event: the test goes on as
    soon as the condition holds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout:g}s waiting for {what}")
        time.sleep(interval)
