"""The YARN layer's one error: what is missing or refused, and how to set it."""
from __future__ import annotations

from squall.errors import SquallError


class YarnError(SquallError):
    """Squall cannot reach or use the YARN cluster (tools, configuration, ResourceManager, Skein)."""
