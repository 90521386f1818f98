"""A spout-headed chain whose last member also takes its input through the stream manager: numbers ->
keyed (chained) feeds two running sums, the first chained behind it (its stream has two subscribers, so
it goes through the stream manager, back into the chain's process). Enough input for backpressure."""
import operator

from streamlet_data import Record

from squall import Builder

N = 300_000
KEYS = 10
TOTALS = {key: sum(range(key, N, KEYS)) for key in range(KEYS)}


def final(pair):
    """A key's last running sum (the sum of its numbers below N): the only one recorded."""
    return pair[1] == TOTALS[pair[0]]


builder = Builder("streamlet_loopback")
keyed = builder.source(range(N)).named("numbers").key_by(lambda x: x % KEYS).named("keyed")
keyed.reduce_by_key(operator.add).named("sums").filter(final).sink(Record("sums"))
keyed.reduce_by_key(operator.add).named("sums_again").parallelism(2).filter(final).sink(Record("again"))
builder.set_config({"topology.workers": 1})
