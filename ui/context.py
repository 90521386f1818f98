"""What every request of one UI server shares."""
from __future__ import annotations

from dataclasses import dataclass
from squall.conf import Config
from squall.state import StateManager
from squall.ui.metrics import MetricsCache


@dataclass(frozen=True)
class UiContext:
    state: StateManager  # the started state manager the server reads (local or ZooKeeper)
    config: Config  # the server's configuration (cluster file and --config-property applied)
    metrics: MetricsCache
    token: str  # actions need it (Authorization: Bearer)
    reports_dir: str  # where capacity reports are looked for
