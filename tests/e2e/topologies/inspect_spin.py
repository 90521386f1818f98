"""A topology to look inside (squall logs --grep, squall profile): every task of ``spin`` logs a marker line
at start and then spends its time in ``spin_in_named_function`` (60% busy), keeping the last strings it made (so they
are its allocations still held). ``numbers`` and ``spin`` have the same parallelism and a shuffle edge: each
spin task runs chained in its numbers task's process, one chain per container on two containers."""
import logging
import time

from squall import Bolt, Spout, TopologyBuilder

log = logging.getLogger("inspect_spin")
KEPT = 2000


def spin_in_named_function(kept: list, seconds: float) -> None:
    """Busy for 3 ms (making strings), resting 2 ms, for ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        burst = time.monotonic() + 0.003
        while time.monotonic() < burst:
            kept.append(f"spin {time.monotonic()}" * 64)
            del kept[:-KEPT]
        time.sleep(0.002)


class Numbers(Spout):
    outputs = ["n"]

    def initialize(self, config, context):
        self.n = 0

    def next_tuple(self):
        self.n += 1
        self.emit([self.n])


class Spin(Bolt):
    def initialize(self, config, context):
        self.kept = []
        log.info("inspect marker from task %d", context.get_task_id())

    def process(self, tup):
        spin_in_named_function(self.kept, 0.5)


builder = TopologyBuilder("inspect_spin")
numbers = builder.add_spout("numbers", Numbers, par=2)
builder.add_bolt("spin", Spin, par=2, inputs=[numbers])
topology = builder.build()
