"""Packing's one exception type."""
from squall.errors import SquallError


class PackingError(SquallError, ValueError):
    """A packing request that cannot be met, or a plan that breaks an invariant.

    The message names the component, configuration key or value at fault so
    that the CLI can print it as one line.
    """
