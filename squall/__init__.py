"""Squall: Heron/Storm-style stream processing in Python.

The public topology API: spouts, bolts, streams, groupings and builders.
"""
from squall.component import Bolt, ReliableSpout, Spout, TopologyContext, Tuple, TupleBatch
from squall.errors import SquallError, TopologyError
from squall.metrics import CountMetric, MeanMetric, MultiCountMetric
from squall.stateful import KeyValueState, StatefulBolt, StatefulSpout
from squall.stream import CustomGrouping, Grouping, Stream
from squall.topology import Topology, TopologyBuilder
from squall.streamlet import Builder, Streamlet
from squall.window import Window, WindowView
from squall.windowed_bolt import WindowedBolt

__version__ = "0.1.0"

__all__ = [
    "Bolt",
    "Builder",
    "CountMetric",
    "CustomGrouping",
    "Grouping",
    "KeyValueState",
    "MeanMetric",
    "MultiCountMetric",
    "ReliableSpout",
    "Spout",
    "SquallError",
    "StatefulBolt",
    "StatefulSpout",
    "Stream",
    "Streamlet",
    "Topology",
    "TopologyBuilder",
    "TopologyContext",
    "TopologyError",
    "Tuple",
    "TupleBatch",
    "Window",
    "WindowView",
    "WindowedBolt",
    "__version__",
]
