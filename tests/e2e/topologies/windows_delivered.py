"""A windowed bolt that is its spout's only subscriber: at most once, chained, it gets each tuple by call;
at least once it acks for itself, so it runs in its own process. Config as windows.py."""
from window_data import Events
from windows import CountSliding

from squall import TopologyBuilder

builder = TopologyBuilder("windows_delivered")
events = builder.add_spout("events", Events)
builder.add_bolt("count_sliding", CountSliding, inputs=[events])
builder.set_config({"topology.workers": 1, "e2e.events": 420, "e2e.rate": 1000})
topology = builder.build()
