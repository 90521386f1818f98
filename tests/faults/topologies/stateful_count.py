"""A stateful word count at EFFECTIVELY_ONCE, for kills and rescales mid-run (docs/state.md):
``squall.testing.words.counting_topology``, 6,000 sentences at 300/s a spout task; the sink's folder is
given at submit (``testing.out.dir``) and ``committed_counts`` reads it."""
from squall.testing.words import counting_topology

topology = counting_topology("stateful_count", sentences=6000, rate=300)
