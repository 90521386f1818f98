"""Rows (par 1) -> Tally (par 1): what bench/connectors.py's file pipeline carries without its sink."""
from squall import TopologyBuilder

from bench_components import Rows, Tally

builder = TopologyBuilder("rows_tally")
rows = builder.add_spout("rows", Rows, par=1)
builder.add_bolt("tally", Tally, par=1, inputs=[rows])
builder.set_config({"topology.workers": 1, "squall.chaining": "off"})
topology = builder.build()
