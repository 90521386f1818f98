"""KafkaSpout (par 1; ``kafka.*`` from the command line) -> Tally (par 1): bench/connectors.py."""
from squall import TopologyBuilder
from squall.connectors.kafka import KafkaSpout

from bench_components import Tally

builder = TopologyBuilder("kafka_tally")
kafka = builder.add_spout("kafka", KafkaSpout, par=1, config={"kafka.start": "earliest"})
builder.add_bolt("tally", Tally, par=1, inputs=[kafka])
builder.set_config({"topology.workers": 1})
topology = builder.build()
