"""A windowed join and a windowed reduce as streamlets, in event time (elements ``[key, ts, amount]``)."""
from streamlet_data import Record, left, right

from squall import Builder, Window

builder = Builder("streamlet_join")
orders = builder.source(left).named("orders").key_by(lambda e: e[0]).named("orders_by_key")
payments = builder.source(right).named("payments").key_by(lambda e: e[0]).named("payments_by_key")
(orders.join(payments, Window.tumbling(duration=10), lambda a, b: [a[2], b[2]], timestamp=lambda e: e[1])
    .named("joined").sink(Record("joined")))
(orders.reduce_by_key_and_window(Window.sliding(duration=20, every=10), lambda a, b: [a[0], a[1], a[2] + b[2]],
                                 timestamp=lambda e: e[1])
    .named("sums").sink(Record("sums")))
builder.set_config({"topology.workers": 1})
