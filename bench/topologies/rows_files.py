"""Rows (par 1) -> FileSink (par 1; ``files.*`` from the command line): bench/connectors.py."""
from squall import TopologyBuilder
from squall.connectors.files import FileSink

from bench_components import Rows

builder = TopologyBuilder("rows_files")
rows = builder.add_spout("rows", Rows, par=1)
builder.add_bolt("sink", FileSink, par=1, inputs=[rows])
builder.set_config({"topology.workers": 1})
topology = builder.build()
