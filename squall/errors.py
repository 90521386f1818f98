"""Squall's own exceptions: user errors the CLI reports in one line, exit 2."""
from squall.conf import ConfigError


class SquallError(Exception):
    """An expected failure caused by the user's input or environment."""


class TopologyError(SquallError, ValueError):
    """A topology that cannot run: the message names the component and field."""


__all__ = ["ConfigError", "SquallError", "TopologyError"]
