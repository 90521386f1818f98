"""What the UI asks topology masters: windows by name, and answers kept a second.

The figures come from each topology master's ``MetricsStore``
(``runtime/metrics_store.py``) through the runtime's client, as ``squall
metrics`` gets them. ``MetricsCache`` keeps each answer ``ttl`` seconds, so a
browser polling every second and several pages showing one topology cost its
master at most one query of each kind a second.
"""
from __future__ import annotations

import threading
import time
from typing import Optional

from squall.errors import SquallError
from squall.runtime.client import TMasterUnreachable, query_metrics
from squall.state import StateManager

# window name -> seconds (None: since start); Storm's :all-time is "all"
WINDOWS = {"60s": 60.0, "10m": 600.0, "1h": 3600.0, "all": None}
DEFAULT_WINDOW = "10m"


class BadRequest(SquallError):
    """A request's parameter that the UI cannot take (answered 400)."""


def parse_window(text: Optional[str]) -> str:
    """A window's name from ``?window=``: a name of ``WINDOWS``, or its seconds (``600``)."""
    if text is None or text == "":
        return DEFAULT_WINDOW
    if text in WINDOWS:
        return text
    by_secs = {str(int(v)): k for k, v in WINDOWS.items() if v is not None}
    if text in by_secs:
        return by_secs[text]
    raise BadRequest(f"window {text!r}: expected one of {', '.join(WINDOWS)} (or 60, 600, 3600 seconds)")


class MetricsCache:
    """Topology masters' answers, each kept ``ttl`` seconds."""

    def __init__(self, state: StateManager, ttl: float = 1.0, timeout: float = 3.0) -> None:
        self.state, self.ttl, self.timeout = state, ttl, timeout
        self.lock = threading.Lock()
        self.entries: dict = {}  # key -> (monotonic time, answer)

    def get(self, name: str, window: str, component: Optional[str] = None, series: bool = False,
            task_ids: Optional[tuple] = None) -> dict:
        """``query_metrics`` of topology ``name`` over ``window`` (``task_ids``: only those tasks' rows, and
        those keeping errors); TMasterUnreachable when it cannot answer."""
        key = (name, window, component, series, task_ids)
        now = time.monotonic()
        with self.lock:
            hit = self.entries.get(key)
            if hit is not None and now - hit[0] < self.ttl:
                return hit[1]
            for k in [k for k, (t, _) in self.entries.items() if now - t >= self.ttl]:
                del self.entries[k]
        answer = query_metrics(self.state, name, timeout=self.timeout, component=component,
                               window_secs=WINDOWS[window], series=series, task_ids=task_ids)
        with self.lock:
            self.entries[key] = (time.monotonic(), answer)
        return answer

    def forget(self, name: str) -> None:
        """Drop topology ``name``'s answers (an action changed it)."""
        with self.lock:
            for k in [k for k in self.entries if k[0] == name]:
                del self.entries[k]

    def try_get(self, name: str, window: str, component: Optional[str] = None, series: bool = False,
                task_ids: Optional[tuple] = None) -> tuple:
        """``(answer, None)``, or ``(None, why)`` when the master cannot answer (a page still shows the rest)."""
        try:
            return self.get(name, window, component, series, task_ids), None
        except TMasterUnreachable as e:
            return None, str(e)
